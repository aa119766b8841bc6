package insert_test

import (
	"fmt"
	"testing"

	"github.com/flowrun/flowrun/framework/engine"
)

// HECA's cache (graphs/heca.yaml, builtin:heca: a hot part, a
// linear-probing table that spares the current and next batch, bypasses)
// ends with no-cache.yaml's digest on the same data: over localities,
// seeds, cache sizes small enough that the table fills, evicts and
// bypasses, optimizers, and hot parts chosen by coverage, by count or
// absent. Storage changes where rows live, never what they become.
func TestHecaEndsWithNoCacheDigest(t *testing.T) {
	t.Parallel()
	combos := []struct {
		locality  string
		seed      int
		batches   int
		cacheSize string
		optimizer string
		hot       []string
		evicts    bool // the table must fill and replace rows
	}{
		{"zipf", 1, 12, "300", "sgd", nil, true},
		{"high", 2, 9, "2000", "adagrad", []string{"cache.options.hash=identity"}, false},
		{"low", 3, 10, "256", "rowwise_adagrad", []string{"cache.options.profile=none"}, true},
		{"random", 4, 7, "0.05", "sgd", []string{"cache.options.hot_coverage=0.5", "cache.options.hash_seed=9"}, false},
		{"zipf", 5, 15, "600", "adagrad", []string{"cache.options.hot_min_count=3", "cache.options.warmup_batches=4"}, false},
	}
	for _, c := range combos {
		name := fmt.Sprintf("%s/seed=%d/batches=%d/cache=%s/%s", c.locality, c.seed, c.batches, c.cacheSize, c.optimizer)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sets := append([]string{
				"dataset.locality=" + c.locality, fmt.Sprintf("seed=%d", c.seed),
				fmt.Sprintf("dataset.batches=%d", c.batches), "cache.size=" + c.cacheSize,
				"embedding.optimizer=" + c.optimizer,
			}, small...)
			if c.optimizer != "sgd" {
				sets = append(sets, "stages.train.learning_rate=0.05")
			}
			want, err := runGraph(t, "no-cache", engine.HazardsOff, sets...)
			if err != nil {
				t.Fatalf("no-cache: %v", err)
			}
			got, err := runGraph(t, "heca", engine.HazardsStrict, append(sets, c.hot...)...)
			if err != nil {
				t.Fatalf("heca: %v", err)
			}
			if got.Digest != want.Digest {
				t.Errorf("heca: digest %s, want no-cache's %s", got.Digest, want.Digest)
			}
			st := got.Cache
			if st == nil || st.Misses == 0 || st.Hits == 0 {
				t.Fatalf("cache stats %+v: no row moved or hit", st)
			}
			if c.evicts && st.Evictions == 0 {
				t.Errorf("cache stats %+v: no evictions, the replacement went untested", st)
			}
		})
	}
}
