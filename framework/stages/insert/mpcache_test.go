package insert_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/engine"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/plugins/caches/mpcache"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
	"github.com/flowrun/flowrun/sdk/plugin"
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
		{"random", "2000", "adagrad", 5, 7, []string{"ways=4", "replacement=lru", "per_table=false", "fraction=0.02"}},
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
		{3, "256", "rowwise_adagrad", []string{"ways=2", "hash=mix", "per_table=false"}},
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

// The run's cache figures are summed over all tables; the paper's Table 6
// hit rates are of its cached tables (more than 1K rows). replayMPCache
// plans the run's own training batches with an mpcache policy of the
// graph's options, as the plan stage does, and returns its per-table
// counts. The test checks that the replay is the run (the same hits,
// misses, evictions and distinct-row figures as results.json), so the
// per-table figures are the run's; FLOWRUN_MPCACHE_SETS="k=v,k=v" logs,
// for graphs/mixed-precision-cache.yaml with those overrides, the hit
// rates over the tables of more than 1000 rows
// (docs/benchmarks-mixed-precision.md).
func TestMPCacheReplayIsTheRun(t *testing.T) {
	t.Parallel()
	if sets := os.Getenv("FLOWRUN_MPCACHE_SETS"); sets != "" {
		logOver1K(t, sets, replayMPCache(t, strings.Split(sets, ",")))
		return
	}
	sets := []string{"dataset.batches=10", "dataset.batch_size=256", "dataset.eval_batches=1"}
	res, err := runGraph(t, "mixed-precision-cache", engine.HazardsOff, sets...)
	if err != nil {
		t.Fatal(err)
	}
	var sum mpcache.Counts
	for _, c := range replayMPCache(t, sets).counts {
		sum.Lookups, sum.Hits, sum.Victims = sum.Lookups+c.Lookups, sum.Hits+c.Hits, sum.Victims+c.Victims
		sum.Unique, sum.UniqueHits = sum.Unique+c.Unique, sum.UniqueHits+c.UniqueHits
	}
	st := res.Cache
	if sum.Hits != st.Hits || sum.Lookups-sum.Hits != st.Misses || sum.Victims != st.Evictions ||
		sum.UniqueHits != st.DistinctHits || sum.Unique-sum.UniqueHits != st.DistinctMisses {
		t.Errorf("replay %+v, run %+v", sum, st)
	}
	if sum.Victims == 0 || sum.UniqueHits == 0 {
		t.Errorf("replay %+v: the cache must replace and hit", sum)
	}
}

// replayed is a replay's per-table counts and the tables' rows, and how
// often Algorithm 2, within one batch, evicted a row it had hit earlier
// in it (hitThenEvicted) or let a row it had evicted back in
// (evictedThenBack): where flowrun's plan, which shows each set's net
// change, and the paper's loop round an FP32 row differently once host
// tables are low-precision (the README's "Where the update happens").
type replayed struct {
	counts                          []mpcache.Counts
	rows                            []int64
	hitThenEvicted, evictedThenBack int64
}

// withinBatch counts, in one batch's steps, the rows hit and later
// evicted, and the rows evicted and later readmitted.
func (r *replayed) withinBatch(events []mpcache.Event) {
	hit, evicted := map[int64]bool{}, map[int64]bool{}
	for _, e := range events {
		if evicted[e.Row] && (e.Action == mpcache.Fill || e.Action == mpcache.Replace) {
			r.evictedThenBack++
		}
		if e.Action == mpcache.Hit {
			hit[e.Row] = true
		}
		if e.Action == mpcache.Replace {
			evicted[e.Victim] = true
			if hit[e.Victim] {
				r.hitThenEvicted++
			}
		}
	}
}

func replayMPCache(t *testing.T, sets []string) replayed {
	t.Helper()
	g, err := build(t, "mixed-precision-cache", sets...)
	if err != nil {
		t.Fatal(err)
	}
	cfg := g.Config
	d := cfg.Dataset
	all := readBatches(t, cfg.Seed, d)[:d.Batches]
	perBatch := int64(d.Tables * d.BatchSize * d.Lookups)
	a := cachetest.NewArena(t, perBatch*48*int64(len(all))+1<<20)
	opts := maps.Clone(cfg.Cache.Options)
	opts["capacity"] = cfg.CacheCapacity()
	p, setup := configureReplay(t, g, opts, mpcache.New())
	var out replayed
	for i, b := range all {
		if _, err := p.Plan(context.Background(), a.NewPlan(uint64(i), b).Req); err != nil {
			t.Fatal(err)
		}
		for tab := range b {
			out.withinBatch(p.(*mpcache.Policy).Events(tab))
		}
	}
	out.counts = p.(*mpcache.Policy).Counts()
	for _, tab := range setup.Tables {
		out.rows = append(out.rows, tab.Rows)
	}
	return out
}

// logOver1K logs a replay's hit rates per lookup and per distinct row
// over every table and over the tables of more than 1000 rows.
func logOver1K(t *testing.T, sets string, r replayed) {
	var all, big mpcache.Counts
	nBig := 0
	for i, c := range r.counts {
		for _, s := range []*mpcache.Counts{&all, &big} {
			if s == &big && r.rows[i] <= 1000 {
				continue
			}
			s.Lookups, s.Hits, s.Unique, s.UniqueHits = s.Lookups+c.Lookups, s.Hits+c.Hits, s.Unique+c.Unique, s.UniqueHits+c.UniqueHits
			s.Replacements += c.Replacements
		}
		if r.rows[i] > 1000 {
			nBig++
		}
	}
	rate := func(a, b int64) float64 { return 100 * float64(a) / float64(max(b, 1)) }
	t.Logf("%s: all %d tables: per lookup %.2f%%, per distinct row %.2f%%; the %d tables of more than 1000 rows: per lookup %.2f%%, per distinct row %.2f%%; within a batch, rows hit then evicted %d, evicted then readmitted %d, of %d replacements",
		sets, len(r.counts), rate(all.Hits, all.Lookups), rate(all.UniqueHits, all.Unique),
		nBig, rate(big.Hits, big.Lookups), rate(big.UniqueHits, big.Unique), r.hitThenEvicted, r.evictedThenBack, all.Replacements)
}

// configureReplay configures policy c as graph g's run would, with the
// cache options opts, for a replay of the run's batches outside it.
func configureReplay(t *testing.T, g *graph.Graph, opts map[string]any, c cache.Cache) (cache.Cache, plugin.Setup) {
	t.Helper()
	shape, err := engine.NewShape(g)
	if err != nil {
		t.Fatal(err)
	}
	setup, err := shape.Setup("replay", opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Configure(context.Background(), setup); err != nil {
		t.Fatal(err)
	}
	return c, setup
}
