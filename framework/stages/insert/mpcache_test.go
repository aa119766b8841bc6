package insert_test

import (
	"fmt"
	"testing"

	"github.com/flowrun/flowrun/framework/engine"
)

// mpcacheOn turns graphs/mixed-precision-cache.yaml (builtin:mpcache on
// the criteo-kaggle profile) into the graph of the no-cache run it is
// compared with: that run's dataset (sets), the per-table rows dropped
// for sets' own, and the train stage's learning rate.
func mpcacheOn(sets []string, lr string, options ...string) []string {
	out := append([]string{"dataset.table_rows=null"}, sets...)
	out = append(out, "stages.train.learning_rate="+lr)
	for _, o := range options {
		out = append(out, "cache.options."+o)
	}
	return out
}

// The mixed-precision paper's FP32 cache (builtin:mpcache, Algorithm 2)
// with FP32 host tables ends with graphs/no-cache.yaml's digest: over
// localities, seeds, cache sizes that fill, replace and bypass,
// associativity from direct-mapped to 32-way, LFU and both LRU clocks,
// both hashes, a per-table fraction and optimizers, with the hazard
// checker on. Where a row lives, in a way of its set or in its host
// table, never changes what it becomes.
func TestMPCacheEndsWithNoCacheDigest(t *testing.T) {
	t.Parallel()
	combos := []struct {
		locality, cacheSize, optimizer string
		seed, batches                  int
		options                        []string
	}{
		{"zipf", "512", "sgd", 1, 12, []string{"ways=32", "replacement=lfu"}},
		{"zipf", "256", "adagrad", 2, 10, []string{"ways=1", "replacement=lru"}},
		{"low", "300", "rowwise_adagrad", 3, 9, []string{"ways=1", "replacement=lfu", "hash=mix"}},
		{"high", "0.05", "sgd", 4, 8, []string{"ways=8", "replacement=lru", "lru_clock=update"}},
		{"random", "2000", "adagrad", 5, 7, []string{"ways=4", "replacement=lru", "fraction=0.02"}},
	}
	for _, c := range combos {
		name := fmt.Sprintf("%s/seed=%d/cache=%s/%v/%s", c.locality, c.seed, c.cacheSize, c.options, c.optimizer)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sets := workload(c.locality, c.seed, c.batches, c.cacheSize, c.optimizer)
			lr := "10"
			if c.optimizer != "sgd" {
				lr = "0.05"
			}
			want, err := runGraph(t, "no-cache", engine.HazardsOff, append(sets, "stages.train.learning_rate="+lr)...)
			if err != nil {
				t.Fatalf("no-cache: %v", err)
			}
			got, err := runGraph(t, "mixed-precision-cache", engine.HazardsStrict, mpcacheOn(sets, lr, c.options...)...)
			if err != nil {
				t.Fatalf("mixed-precision-cache: %v", err)
			}
			if got.Digest != want.Digest {
				t.Errorf("mixed-precision-cache: digest %s, want no-cache's %s", got.Digest, want.Digest)
			}
			st := got.Cache
			if st == nil || st.Hits == 0 || st.Misses == 0 || st.Evictions == 0 {
				t.Fatalf("cache stats %+v: the cache must hit, miss and replace", st)
			}
			if st.DistinctHits == 0 || st.DistinctMisses == 0 || st.DistinctHits > st.Hits {
				t.Errorf("cache stats %+v: distinct rows must hit and miss, and hit no more often than lookups", st)
			}
		})
	}
}

// On the criteo-kaggle profile (Kaggle's 26 cardinalities, one lookup
// per field) the cache ends with graphs/criteo-no-cache.yaml's digest,
// and with mixed-precision-fp32.yaml's at the graphs' own scaled
// configuration, shrunk to a few batches.
func TestMPCacheCriteoEndsWithCriteoNoCacheDigest(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		seed      int
		cacheSize string
		optimizer string
		options   []string
	}{
		{1, "64", "sgd", nil},
		{2, "0.05", "adagrad", []string{"ways=1", "replacement=lru"}},
		{3, "256", "rowwise_adagrad", []string{"ways=2", "hash=mix", "fraction=0"}},
	} {
		t.Run(fmt.Sprintf("seed=%d/cache=%s/%s", c.seed, c.cacheSize, c.optimizer), func(t *testing.T) {
			t.Parallel()
			sets := []string{
				fmt.Sprintf("seed=%d", c.seed), "dataset.batches=6", "dataset.batch_size=128",
				"dataset.eval_batches=1", "dataset.dim=8", "embedding.optimizer=" + c.optimizer,
			}
			lr := "10"
			if c.optimizer != "sgd" {
				lr = "0.05"
			}
			want, err := runGraph(t, "criteo-no-cache", engine.HazardsOff, append(sets, "stages.train.learning_rate="+lr)...)
			if err != nil {
				t.Fatalf("criteo-no-cache: %v", err)
			}
			got, err := runGraph(t, "mixed-precision-cache", engine.HazardsStrict,
				append(mpcacheOn(sets, lr, c.options...), "cache.size="+c.cacheSize)...)
			if err != nil {
				t.Fatalf("mixed-precision-cache: %v", err)
			}
			if got.Digest != want.Digest {
				t.Errorf("mixed-precision-cache: digest %s, want criteo-no-cache's %s", got.Digest, want.Digest)
			}
			if st := got.Cache; st == nil || st.Hits == 0 || st.Misses == 0 {
				t.Errorf("cache stats %+v: the cache must hit and miss", st)
			}
		})
	}
	t.Run("scaled", func(t *testing.T) {
		t.Parallel()
		sets := []string{"dataset.batches=8", "dataset.batch_size=256", "dataset.eval_batches=1"}
		want, err := runGraph(t, "mixed-precision-fp32", engine.HazardsOff, sets...)
		if err != nil {
			t.Fatalf("mixed-precision-fp32: %v", err)
		}
		got, err := runGraph(t, "mixed-precision-cache", engine.HazardsStrict, sets...)
		if err != nil {
			t.Fatalf("mixed-precision-cache: %v", err)
		}
		if got.Digest != want.Digest {
			t.Errorf("mixed-precision-cache: digest %s, want mixed-precision-fp32's %s", got.Digest, want.Digest)
		}
		if st := got.Cache; st == nil || st.Evictions == 0 {
			t.Errorf("cache stats %+v: the 5 %% cache must replace", st)
		}
	})
}
