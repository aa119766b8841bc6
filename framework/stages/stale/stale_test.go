package stale_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/engine"
	"github.com/flowrun/flowrun/framework/hazard"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/stages/collect"
	"github.com/flowrun/flowrun/framework/stages/exchange"
	"github.com/flowrun/flowrun/framework/stages/insert"
	"github.com/flowrun/flowrun/framework/stages/internal/stagetest"
	"github.com/flowrun/flowrun/framework/stages/load"
	"github.com/flowrun/flowrun/framework/stages/plan"
	"github.com/flowrun/flowrun/framework/stages/stale"
	"github.com/flowrun/flowrun/framework/stages/train"
)

const graphs = "../../../graphs/"

func kinds(t *testing.T) stage.Registry {
	t.Helper()
	r, err := stage.NewRegistry(load.NewFactory(), plan.NewFactory(), collect.NewFactory(),
		exchange.NewFactory(), insert.NewFactory(), train.NewFactory(), stale.NewFactory())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func run(t *testing.T, path string, hazards engine.HazardMode, sets ...string) *results.Results {
	t.Helper()
	res, err := stagetest.RunGraph(t, kinds(t), path, hazards, sets...)
	if err != nil {
		t.Fatalf("%s %s: %v", path, strings.Join(sets, " "), err)
	}
	return res
}

// small is the insert tests' small dataset: 3 tables of 20000 rows,
// batches of 64 × 4 lookups, dim 8.
var small = []string{
	"dataset.tables=3", "dataset.rows=20000", "dataset.batch_size=64", "dataset.lookups=4",
	"dataset.dim=8", "dataset.eval_batches=2",
}

func workload(locality string, seed, batches int, cacheSize, optimizer string) []string {
	sets := append([]string{
		"dataset.locality=" + locality, fmt.Sprintf("seed=%d", seed),
		fmt.Sprintf("dataset.batches=%d", batches), "cache.size=" + cacheSize,
		"embedding.optimizer=" + optimizer,
	}, small...)
	if optimizer != "sgd" {
		sets = append(sets, "stages.train.learning_rate=0.05")
	}
	return sets
}

var combos = []struct {
	locality  string
	seed      int
	batches   int
	cacheSize string
	optimizer string
}{
	{"zipf", 1, 12, "300", "sgd"},
	{"high", 2, 9, "2000", "adagrad"},
	{"low", 3, 10, "256", "rowwise_adagrad"},
}

// staleness: 0 is exact: heca-stale.yaml ends with no-cache.yaml's digest,
// and so does heca-pipelined.yaml (HECA's overlap, exact in flowrun) under
// the strict hazard checker, over localities, seeds, caches small enough
// to evict and bypass, and optimizers.
func TestStalenessZeroAndPipelinedAreExact(t *testing.T) {
	t.Parallel()
	for _, c := range combos {
		t.Run(fmt.Sprintf("%s/seed=%d/cache=%s/%s", c.locality, c.seed, c.cacheSize, c.optimizer), func(t *testing.T) {
			t.Parallel()
			sets := workload(c.locality, c.seed, c.batches, c.cacheSize, c.optimizer)
			want := run(t, graphs+"no-cache.yaml", engine.HazardsOff, sets...)
			s0 := run(t, graphs+"heca-stale.yaml", engine.HazardsStrict, append(sets, "stages.stale.staleness=0")...)
			if s0.Digest != want.Digest {
				t.Errorf("heca-stale, staleness 0: digest %s, want no-cache's %s", s0.Digest, want.Digest)
			}
			if _, ok := s0.Metrics.Extra[stale.MetricStaleness]; ok {
				t.Errorf("staleness 0 marked the run inexact: %v", s0.Metrics.Extra)
			}
			pl := run(t, graphs+"heca-pipelined.yaml", engine.HazardsStrict, sets...)
			if pl.Digest != want.Digest {
				t.Errorf("heca-pipelined: digest %s, want no-cache's %s", pl.Digest, want.Digest)
			}
			if st := pl.Cache; st == nil || st.Evictions == 0 && c.cacheSize != "2000" {
				t.Errorf("heca-pipelined cache stats %+v: the replacement went untested", st)
			}
		})
	}
}

// staleness: 1 is deterministic and depends on the batches only: the
// same digest wherever the rows live (HECA's cache, evicting and
// bypassing, or the host tables), for any nats.credits; not the exact
// digest; marked inexact, with some rows read stale.
func TestStalenessOneIsDeterministic(t *testing.T) {
	t.Parallel()
	for _, c := range combos {
		t.Run(fmt.Sprintf("%s/seed=%d/cache=%s/%s", c.locality, c.seed, c.cacheSize, c.optimizer), func(t *testing.T) {
			t.Parallel()
			sets := workload(c.locality, c.seed, c.batches, c.cacheSize, c.optimizer)
			exact := run(t, graphs+"no-cache.yaml", engine.HazardsOff, sets...)
			cached := run(t, graphs+"heca-stale.yaml", engine.HazardsStrict, sets...)
			host := run(t, "testdata/no-cache-stale.yaml", engine.HazardsOff, append(sets, "nats.credits=3")...)
			if cached.Digest != host.Digest {
				t.Errorf("staleness 1: digest %s with heca's cache, %s with the host tables", cached.Digest, host.Digest)
			}
			if cached.Digest == exact.Digest {
				t.Errorf("staleness 1 ended with the exact digest %s: no row was read stale", exact.Digest)
			}
			x := cached.Metrics.Extra
			if x[stale.MetricStaleness] != 1 || !(x[stale.MetricStaleShare] > 0 && x[stale.MetricStaleShare] < 1) {
				t.Errorf("metrics %v: want staleness 1 and a stale row share in (0, 1)", x)
			}
		})
	}
}

// Train's own staleness: 1 in a pipelined graph (heca-stale-pipelined.yaml)
// ends with the same digest as the stale stage in a sequential one
// (heca-stale.yaml) on the same data and cache, for nats.credits 0 and 1
// (windows 3/2 and 6/4, what each needs), under the strict hazard
// checker, and reads the same share of rows stale: the rows a batch reads
// depend on the batches, not on the timing. Its staleness 0 is exact.
func TestTrainStalenessPipelinedMatchesStaleStage(t *testing.T) {
	t.Parallel()
	for _, c := range combos {
		t.Run(fmt.Sprintf("%s/seed=%d/cache=%s/%s", c.locality, c.seed, c.cacheSize, c.optimizer), func(t *testing.T) {
			t.Parallel()
			sets := workload(c.locality, c.seed, c.batches, c.cacheSize, c.optimizer)
			want := run(t, graphs+"heca-stale.yaml", engine.HazardsStrict, sets...)
			for _, credits := range []struct{ credits, past, future int }{{0, 3, 2}, {1, 6, 4}} {
				got := run(t, graphs+"heca-stale-pipelined.yaml", engine.HazardsStrict, append(sets,
					fmt.Sprintf("nats.credits=%d", credits.credits), fmt.Sprintf("stages.plan.past_window=%d", credits.past),
					fmt.Sprintf("stages.plan.future_window=%d", credits.future))...)
				if got.Digest != want.Digest {
					t.Errorf("credits %d: train's staleness 1 pipelined: digest %s, want the stale stage's %s", credits.credits, got.Digest, want.Digest)
				}
				g, w := got.Metrics.Extra, want.Metrics.Extra
				if g[stale.MetricStaleness] != 1 || g[stale.MetricStaleShare] != w[stale.MetricStaleShare] {
					t.Errorf("credits %d: metrics %v, want staleness 1 and the stale stage's share %v", credits.credits, g, w[stale.MetricStaleShare])
				}
			}
			exact := run(t, graphs+"no-cache.yaml", engine.HazardsOff, sets...)
			s0 := run(t, graphs+"heca-stale-pipelined.yaml", engine.HazardsStrict, append(sets, "stages.train.staleness=0")...)
			if s0.Digest != exact.Digest {
				t.Errorf("train's staleness 0 pipelined: digest %s, want no-cache's %s", s0.Digest, exact.Digest)
			}
			if _, ok := s0.Metrics.Extra[stale.MetricStaleness]; ok {
				t.Errorf("staleness 0 marked the run inexact: %v", s0.Metrics.Extra)
			}
		})
	}
}

// Train's staleness 1 with every row in its host table (no-cache.yaml,
// pipelined, credits 2) ends with the stale stage's digest too, and so
// does it with no held-out batch (nothing left to restore at the end).
func TestTrainStalenessOnHostTables(t *testing.T) {
	t.Parallel()
	for _, eval := range []string{"2", "0"} {
		sets := append(workload("zipf", 4, 10, "300", "adagrad"), "dataset.eval_batches="+eval)
		want := run(t, graphs+"heca-stale.yaml", engine.HazardsOff, sets...)
		got := run(t, graphs+"no-cache.yaml", engine.HazardsOff, append(sets, "stages.train.staleness=1")...)
		if got.Digest != want.Digest {
			t.Errorf("eval batches %s: train's staleness 1 on the host tables: digest %s, want the stale stage's %s", eval, got.Digest, want.Digest)
		}
	}
}

// The strict hazard checker accepts the declared staleness (the runs
// above) and still flags anything older: a policy that claims windows it
// does not hold makes collect read a row a batch still in flight has yet
// to write, and the run stops at that read, staleness 1 or not.
func TestTrainStalenessHazardsStillFire(t *testing.T) {
	t.Parallel()
	sets := append(workload("low", 5, 30, "1536", "sgd"), "cache.plugin=builtin:overclaiming-scratchpipe", "cache.options=null",
		"cache.options.past_window=0", "cache.options.future_window=0")
	_, err := stagetest.RunGraph(t, kinds(t), graphs+"heca-stale-pipelined.yaml", engine.HazardsStrict, sets...)
	var h *hazard.Hazard
	if !errors.As(err, &h) || h.Writer >= h.Seq {
		t.Fatalf("err = %v, want a hazard naming an earlier writer", err)
	}
	t.Logf("flagged: %v", err)
}

// Train's staleness takes 0 or 1 and FP32 host tables only.
func TestTrainStalenessRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sets []string
		want string
	}{
		{[]string{"stages.train.staleness=2"}, "staleness"},
		{[]string{"stages.train.staleness=1", "embedding.precision=fp16"}, "FP32 host tables"},
	} {
		_, err := stagetest.RunGraph(t, kinds(t), graphs+"no-cache.yaml", engine.HazardsOff, append(workload("zipf", 1, 3, "300", "sgd"), c.sets...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want one naming %q", c.sets, err, c.want)
		}
	}
}

// Without held-out batches the last training batch's stale rows get
// their live value in Finish, before Storage goes back to the host tables
// and the digest is taken.
func TestStalenessOneFinishRestores(t *testing.T) {
	t.Parallel()
	sets := append(workload("zipf", 7, 10, "300", "adagrad"), "dataset.eval_batches=0")
	cached := run(t, graphs+"heca-stale.yaml", engine.HazardsOff, sets...)
	host := run(t, "testdata/no-cache-stale.yaml", engine.HazardsOff, sets...)
	if cached.Digest != host.Digest {
		t.Errorf("staleness 1, no held-out batches: digest %s with heca's cache, %s with the host tables", cached.Digest, host.Digest)
	}
}

// HECA's Fig. 6 claim, loss curves that "closely match": on the
// criteo-kaggle profile (the data of graphs/heca-criteo.yaml), the
// held-out AUC with staleness 1 is within 0.005 of staleness 0's.
func TestStalenessOneAUCOnCriteo(t *testing.T) {
	t.Parallel()
	criteo := []string{
		"dataset.locality=criteo-kaggle", "dataset.tables=26", "dataset.lookups=1", "dataset.rows=null",
		"dataset.batch_size=1024", "dataset.batches=40", "dataset.eval_batches=8", "cache.size=8192",
	}
	s0 := run(t, graphs+"heca-stale.yaml", engine.HazardsOff, append(criteo, "stages.stale.staleness=0")...)
	s1 := run(t, graphs+"heca-stale.yaml", engine.HazardsOff, criteo...)
	if s0.Metrics.AUC == nil || s1.Metrics.AUC == nil {
		t.Fatal("no held-out AUC")
	}
	d := *s1.Metrics.AUC - *s0.Metrics.AUC
	t.Logf("criteo-kaggle, 40 batches of 1024: AUC %.4f (staleness 1) vs %.4f (0), Δ %+.4f; NE %.4f vs %.4f; logloss %.4f vs %.4f; %.1f%% of distinct rows read stale",
		*s1.Metrics.AUC, *s0.Metrics.AUC, d, *s1.Metrics.NE, *s0.Metrics.NE, *s1.Metrics.LogLoss, *s0.Metrics.LogLoss,
		100*s1.Metrics.Extra[stale.MetricStaleShare])
	if math.Abs(d) > 0.005 {
		t.Errorf("AUC with staleness 1 is %.4f from staleness 0's, more than 0.005", d)
	}
	if s1.Digest == s0.Digest {
		t.Error("staleness 1 ended with staleness 0's digest")
	}
}

// A pipelined graph cannot read stale deterministically through this
// stage: refused, naming the fix.
func TestStalenessRefusedPipelined(t *testing.T) {
	_, err := stagetest.RunGraph(t, kinds(t), graphs+"heca-stale.yaml", engine.HazardsOff,
		append(workload("zipf", 1, 3, "300", "sgd"), "pipeline=pipelined", "stages.plan.past_window=4", "stages.plan.future_window=2")...)
	if err == nil || !strings.Contains(err.Error(), "pipeline: sequential") {
		t.Fatalf("err = %v, want a refusal naming pipeline: sequential", err)
	}
}

// The bytes over the link with DSF are the distinct missed rows × the row
// bytes (values and optimizer state); without DSF (exchange dsf: false)
// every missed lookup × the row bytes; the digest is the same. heca with
// a cache that never fills (nothing bypasses, so every distinct miss is
// moved), over optimizers.
func TestLinkBytesWithAndWithoutDSF(t *testing.T) {
	t.Parallel()
	for _, opt := range []struct {
		name   string
		stride int64 // floats per row at the small dataset's dim 8
	}{{"sgd", 8}, {"adagrad", 16}, {"rowwise_adagrad", 9}} {
		t.Run(opt.name, func(t *testing.T) {
			t.Parallel()
			sets := workload("zipf", 3, 8, "0.9", opt.name)
			dsf := run(t, graphs+"heca.yaml", engine.HazardsOff, sets...)
			none := run(t, graphs+"heca.yaml", engine.HazardsOff, append(sets, "stages.exchange.dsf=false")...)
			if dsf.Digest != none.Digest {
				t.Errorf("digest %s with DSF, %s without", dsf.Digest, none.Digest)
			}
			row := 4 * opt.stride
			c, n := dsf.Cache, none.Cache
			if c.Evictions != 0 || c.DistinctHits+c.DistinctMisses == 0 {
				t.Fatalf("cache stats %+v: the cache filled, or no distinct rows were counted", c)
			}
			if got, want := c.LinkBytes["to_device"], c.DistinctMisses*row; got != want {
				t.Errorf("with DSF: %d bytes to the device, want %d distinct misses × %d", got, c.DistinctMisses, row)
			}
			if got, want := n.LinkBytes["to_device"], n.Misses*row; got != want {
				t.Errorf("without DSF: %d bytes to the device, want %d missed lookups × %d", got, n.Misses, row)
			}
			if n.LinkBytes["to_device"] <= c.LinkBytes["to_device"] {
				t.Errorf("without DSF %d bytes, with %d: no duplicate miss went untested", n.LinkBytes["to_device"], c.LinkBytes["to_device"])
			}
		})
	}
}
