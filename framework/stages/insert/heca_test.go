package insert_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/data"
	"github.com/flowrun/flowrun/framework/engine"
	"github.com/flowrun/flowrun/plugins/caches/heca"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
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
			sets := workload(c.locality, c.seed, c.batches, c.cacheSize, c.optimizer)
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

// The run's hit rate is per lookup (cache.TableStats); HECA's is most
// likely per distinct feature of a batch, which only the policy counts
// (heca.Policy.Counts). replayHeca plans the run's own batches (the
// seeded source, the host's warm-up profile, the next batch as the future
// window) with a heca policy of the graph's options, as the plan stage
// does, and returns its counts summed over the tables after the last
// training batch. The test checks that the replay is the run (the same
// hits, misses and evictions as results.json), so its per-unique figure is
// the run's; FLOWRUN_HECA_SETS="k=v,k=v" logs both figures for
// graphs/heca.yaml with those overrides (docs/benchmarks-heca.md).
func TestHecaReplayIsTheRun(t *testing.T) {
	t.Parallel()
	if sets := os.Getenv("FLOWRUN_HECA_SETS"); sets != "" {
		c := replayHeca(t, strings.Split(sets, ","))
		t.Logf("%s: hit rate per lookup %.4f (%d/%d), per unique key %.4f (%d/%d), hot rows %d, hot lookups %.4f, bypassed keys %d, evictions %d",
			sets, float64(c.Hits)/float64(c.Lookups), c.Hits, c.Lookups, float64(c.UniqueHits)/float64(c.Unique), c.UniqueHits, c.Unique,
			c.HotRows, float64(c.HotLookups)/float64(c.Lookups), c.Bypasses, c.Evictions)
		return
	}
	for _, loc := range []string{"zipf", "low"} {
		sets := append([]string{"dataset.locality=" + loc, "dataset.batches=12", "cache.size=300"}, small...)
		res, err := runGraph(t, "heca", engine.HazardsOff, sets...)
		if err != nil {
			t.Fatal(err)
		}
		c := replayHeca(t, sets)
		if c.Hits != res.Cache.Hits || c.Lookups-c.Hits != res.Cache.Misses || c.Evictions != res.Cache.Evictions {
			t.Errorf("%s: replay %+v, run %+v", loc, c, res.Cache)
		}
		if c.UniqueHits == 0 || c.Unique >= c.Lookups {
			t.Errorf("%s: replay %+v: no per-unique figure", loc, c)
		}
	}
}

func replayHeca(t *testing.T, sets []string) heca.Counts {
	t.Helper()
	g, err := build(t, "heca", sets...)
	if err != nil {
		t.Fatal(err)
	}
	cfg := g.Config
	d := cfg.Dataset
	all := readBatches(t, cfg.Seed, d)
	// Per lookup: its ID, slot, hit byte and victim triple (41 bytes);
	// the profile's triples are fewer than the warm-up's lookups.
	perBatch := int64(d.Tables * d.BatchSize * d.Lookups)
	a := cachetest.NewArena(t, perBatch*(48*int64(len(all))+24*16)+1<<20)
	opts := maps.Clone(cfg.Cache.Options)
	opts["capacity"] = cfg.Cache.CacheRows(d.Rows)
	_, future := g.Windows()
	opts["future"] = future
	if opts["profile"] != "none" {
		counts := map[[2]int64]int64{}
		for _, b := range all[:min(16, d.Batches)] {
			for tb, ids := range b {
				for _, row := range ids {
					counts[[2]int64{int64(tb), row}]++
				}
			}
		}
		var triples []int64
		for k, n := range counts {
			triples = append(triples, k[0], k[1], n)
		}
		opts["frequencies"] = a.Int64s(triples)
	}
	p, _ := configureReplay(t, g, opts, heca.New())
	plans := make([]*cachetest.Plan, len(all))
	for i, b := range all {
		plans[i] = a.NewPlan(uint64(i), b)
	}
	for i := range d.Batches {
		for _, next := range plans[i+1 : min(len(plans), i+1+future)] {
			plans[i].Req.Future = append(plans[i].Req.Future, cache.Window{Seq: next.Req.Seq, IDs: next.Req.IDs})
		}
		if _, err := p.Plan(context.Background(), plans[i].Req); err != nil {
			t.Fatal(err)
		}
	}
	var sum heca.Counts
	for _, c := range p.(*heca.Policy).Counts() {
		sum.Lookups, sum.Hits, sum.Unique, sum.UniqueHits = sum.Lookups+c.Lookups, sum.Hits+c.Hits, sum.Unique+c.Unique, sum.UniqueHits+c.UniqueHits
		sum.HotLookups, sum.HotRows, sum.Bypasses, sum.Evictions = sum.HotLookups+c.HotLookups, sum.HotRows+c.HotRows, sum.Bypasses+c.Bypasses, sum.Evictions+c.Evictions
	}
	return sum
}

// readBatches is the run's training batches and its first held-out one
// (the future window of the last training batch), per table the IDs of
// its bags, as the load stage fills them.
func readBatches(t *testing.T, seed uint64, d config.Dataset) [][][]int64 {
	t.Helper()
	src, done, err := data.OpenSource(seed, d)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	arr := data.NewArrays(d)
	B, per := d.BatchSize, d.BatchSize*d.Lookups
	var out [][][]int64
	for seq := range d.Batches + min(d.EvalBatches, 1) {
		if err := src.Fill(uint64(seq), seq >= d.Batches, arr); err != nil {
			t.Fatal(err)
		}
		b := make([][]int64, d.Tables)
		for tb := range b {
			off := arr.Offsets[tb*(B+1) : (tb+1)*(B+1)]
			b[tb] = slices.Clone(arr.IDs[tb*per+int(off[0]) : tb*per+int(off[B])])
		}
		out = append(out, b)
	}
	return out
}
