package summary

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flowrun/framework/clock"
	"github.com/flowrun/flowrun/framework/internal/golden"
	"github.com/flowrun/flowrun/framework/results"
)

// fixedResults is a training run's results with every section of the
// summary filled in, and numbers chosen to exercise the formatting
// (thousands, percentages, binary units).
func fixedResults() *results.Results {
	f := func(v float64) *float64 { return &v }
	return &results.Results{
		Graph: "demo", File: "graphs/demo.yaml", RunID: "0123456789abcdef", Seed: 7,
		Batches: 40, EvalBatches: 8,
		Stages: []results.Stage{
			{Name: "load", Kind: "load", Batches: 48, WallMs: results.Percentiles{P50: 2.5, P95: 19.75, P99: 24.125, Mean: 4, Max: 25}},
			{Name: "plan", Kind: "plan", Batches: 48, WallMs: results.Percentiles{P50: 0.948, P95: 13.1, P99: 21, Mean: 2, Max: 22}},
			{Name: "exchange", Kind: "exchange", Batches: 48, WallMs: results.Percentiles{P50: 0.003, P95: 0.008, P99: 0.01},
				ModeledMs: &results.Percentiles{P50: 0.017, P95: 0.018, P99: 0.019, Mean: 0.0168}},
			{Name: "train", Kind: "train", Batches: 48, WallMs: results.Percentiles{P50: 0.492, P95: 9.068, P99: 9.451},
				ModeledMs: &results.Percentiles{P50: 0.022, P95: 0.023, P99: 0.024, Mean: 0.0224}},
		},
		Digest:      "cf6e49bdf5579be9ffe66a454b4efa74703fe923f8c31cdfb1ecf871bf09538d",
		IterationMs: results.Iteration{Wall: 7.5614, Modeled: 0.022343},
		ModeledClock: &clock.Summary{
			Mode: "pipelined", Depth: 8, Batches: 48, MakespanNs: 1107371, Bottleneck: "host",
			Stages: []clock.Usage{
				{Name: "load"}, {Name: "plan"},
				{Name: "exchange", BusyNs: 804692, Utilisation: 0.72667},
				{Name: "train", BusyNs: 1074603, Utilisation: 0.97041},
			},
		},
		Throughput: results.Throughput{WallSamplesPerS: 33860.4, ModeledSamplesPerS: 11457443.6},
		Primitives: []results.Primitives{{Stage: "train", Batches: 48,
			ModeledMs: map[string]float64{"gather": 0.48, "mlp": 0.24, "step": 0.96}}},
		Cache: &results.Cache{
			Plugin: "builtin:lru", Rows: 5000, Hits: 231399, Misses: 96281, Evictions: 70108, HitRate: 0.70617,
			LinkBytes: map[string]int64{"to_host": 4486912, "to_device": 6161984},
		},
		Metrics: results.Metrics{
			Loss: &results.LossCurve{First: 0.7175, Last: 0.5469, FirstTenthMean: 0.6992, LastTenthMean: 0.5246},
			AUC:  f(0.8116), LogLoss: f(0.5156), NE: f(0.8261), EvalCount: 2048,
			Extra: map[string]float64{"dsf_ratio": 0.50512, "dsf_ratio.t0": 0.00391, "dsf_ratio.t1": 0.96875, "dsf_ratio.t2": 0.4},
		},
		HostRSSPeakBytes: 61681664,
		Memory: []results.Memory{
			{Device: "host", What: "flowrun process: peak resident set (getrusage maxrss)", PeakBytes: 61681664, Source: results.MemoryMeasured},
			{Device: "host", What: "host tables: allocated shared memory (file blocks)", PeakBytes: 25608192, VirtualBytes: 25600000, Source: results.MemoryMeasured},
			{Device: "host", What: "batch pool (8 buffers): allocated shared memory (file blocks)", PeakBytes: 839680, VirtualBytes: 15475200, Source: results.MemoryMeasured},
			{Device: "gpu", What: "Storage (device-side cache rows, held in host shared memory): allocated (file blocks)", PeakBytes: 819200, VirtualBytes: 819200, Source: results.MemoryMeasured},
		},
		Plugins: []results.PluginUse{
			{Kind: "model", Role: "model", Ref: "builtin:logreg"},
			{Kind: "device", Role: "devices.gpu", Ref: "builtin:hbm", Profile: "NVIDIA V100 32 GB HBM2, PCIe gen3 x16"},
			{Kind: "cache", Role: "cache", Ref: "../bin/flowrun-cache-lru", Remote: true},
		},
		WallMs:  362.9,
		Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

// TestSummaryGolden prints the summary of fixed results and compares it
// with testdata/summary.golden (go test -run TestSummaryGolden -update
// rewrites it).
func TestSummaryGolden(t *testing.T) {
	var b bytes.Buffer
	Write(&b, fixedResults())
	golden.Check(t, "summary.golden", b.String())
}

// TestSummaryInference checks the lines that depend on the kind of run:
// an inference run has queries, no training batches, no loss and no cache.
func TestSummaryInference(t *testing.T) {
	r := fixedResults()
	ndcg := 0.2987
	r.Stages = []results.Stage{{Name: "score", Kind: "score", Batches: 20}, {Name: "filter", Kind: "filter", Batches: 20}}
	r.Batches, r.EvalBatches, r.Cache, r.ModeledClock, r.Plugins, r.Primitives = 20, 0, nil, nil, nil, nil
	r.IterationMs.Modeled, r.Throughput.ModeledSamplesPerS = 0, 0
	r.Metrics = results.Metrics{NDCG: &ndcg, Extra: map[string]float64{"ndcg_k": 32, "ndcg_queries": 20}}
	var b bytes.Buffer
	Write(&b, r)
	out := b.String()
	for _, want := range []string{"20 batches in 362.9 ms wall\n", "ranking      NDCG@32 0.2987 over 20 queries\n", "iteration    7.561 ms/batch wall\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	for _, not := range []string{"training", "loss", "cache", "held-out", "modeled"} {
		if strings.Contains(out, not) {
			t.Errorf("inference summary without modeled time says %q:\n%s", not, out)
		}
	}
}

// TestTraining: whether a run trained is read from its data, whatever its
// stages are called: a loss curve or held-out batches.
func TestTraining(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*results.Results)
		want string
	}{
		{"loss and held-out", func(*results.Results) {}, "40 training batches + 8 held-out"},
		{"loss only", func(r *results.Results) { r.EvalBatches = 0 }, "40 training batches"},
		{"held-out only", func(r *results.Results) { r.Metrics.Loss = nil }, "40 training batches + 8 held-out"},
		{"neither", func(r *results.Results) { r.Metrics.Loss, r.EvalBatches = nil, 0 }, "40 batches"},
		{"stages renamed", func(r *results.Results) {
			for i := range r.Stages {
				r.Stages[i].Kind = "x"
			}
		}, "40 training batches + 8 held-out"},
	} {
		r := fixedResults()
		c.edit(r)
		if got := batchCounts(r); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestSummaryModeledLabelled checks non-negotiable 2: every line with a
// modeled figure says so.
func TestSummaryModeledLabelled(t *testing.T) {
	var b bytes.Buffer
	Write(&b, fixedResults())
	primitives := false
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "iteration") || strings.HasPrefix(l, "throughput") {
			if !strings.Contains(l, "modeled") || !strings.Contains(l, "wall") {
				t.Errorf("line gives both clocks without naming them: %q", l)
			}
		}
		if strings.HasPrefix(l, "primitives") {
			primitives = true
			if !strings.Contains(l, "modeled") {
				t.Errorf("primitives line without the word modeled: %q", l)
			}
		}
	}
	if !primitives {
		t.Errorf("no primitives line:\n%s", b.String())
	}
}

// TestSummaryMemoryFallback: without a memory breakdown the process's peak
// resident set stands alone, labelled measured.
func TestSummaryMemoryFallback(t *testing.T) {
	r := fixedResults()
	r.Memory = nil
	var b bytes.Buffer
	Write(&b, r)
	if want := "memory peak  58.8 MiB  host  flowrun process: peak resident set  measured\n"; !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
}

func TestTable(t *testing.T) {
	tb := Table{Align: "lr"}
	tb.Row("a", "1")
	tb.Row("longer", "12345")
	tb.Row("é", "")
	var b bytes.Buffer
	tb.Write(&b, "> ")
	want := "a           1\n> longer  12345\n> é\n"
	if b.String() != want {
		t.Errorf("table:\n%q\nwant\n%q", b.String(), want)
	}
}

func TestFormatting(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Thousands(0), "0"}, {Thousands(999.4), "999"}, {Thousands(1000), "1,000"},
		{Thousands(-1234567), "-1,234,567"}, {Thousands(11457443.6), "11,457,444"},
		{BytesIEC(0), "0 B"}, {BytesIEC(1023), "1023 B"}, {BytesIEC(1024), "1.0 KiB"},
		{BytesIEC(61681664), "58.8 MiB"}, {BytesIEC(3 << 30), "3.0 GiB"},
		{Ms(0.0224), "0.022 ms"}, {Ms(362.94), "362.9 ms"}, {Ms(2686.2), "2,686 ms"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// TestProgressOffTerminal: a bar on a writer that is not a terminal draws
// nothing and passes writes through.
func TestProgressOffTerminal(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b, false)
	for i := 1; i <= 5; i++ {
		p.Update(i, 5)
	}
	p.Finish()
	if b.Len() != 0 {
		t.Errorf("progress off a terminal wrote %q", b.String())
	}
	if _, err := p.Write([]byte("warning\n")); err != nil || b.String() != "warning\n" {
		t.Errorf("progress.Write off a terminal: %v, wrote %q", err, b.String())
	}
}

// TestSummaryNamesModeledHardware: the summary names the hardware a device
// models (its profile), not only its plugin, points at the paper-scale
// figures, and marks memory held for another device as a stand-in in host
// memory, and only that memory.
func TestSummaryNamesModeledHardware(t *testing.T) {
	var b bytes.Buffer
	Write(&b, fixedResults())
	out := b.String()
	for _, want := range []string{"NVIDIA V100 32 GB HBM2, PCIe gen3 x16", "docs/benchmarks.md"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "stand-in") != strings.Contains(l, " gpu  Storage") {
			t.Errorf("stand-in marks the wrong line: %q", l)
		}
	}
	r := fixedResults()
	r.IterationMs.Modeled = 0 // nothing modeled: nothing to explain
	b.Reset()
	Write(&b, r)
	if strings.Contains(b.String(), "docs/benchmarks.md") {
		t.Errorf("explains modeled figures of a run without any:\n%s", b.String())
	}
}

// TestSummaryDatasetEpochs: a run on a batch file says how many epochs it
// ran, and that the data repeats only when it did.
func TestSummaryDatasetEpochs(t *testing.T) {
	for _, c := range []struct {
		epochs  float64
		repeats bool
	}{{2.5, true}, {1, false}, {0.5, false}} {
		r := fixedResults()
		r.Dataset = &results.DatasetUse{Path: "x.frb", FileBatches: 16, Epochs: c.epochs}
		var b bytes.Buffer
		Write(&b, r)
		if !strings.Contains(b.String(), "epochs") || strings.Contains(b.String(), "repeats") != c.repeats {
			t.Errorf("epochs %v: repeats said %v, want %v:\n%s", c.epochs, !c.repeats, c.repeats, b.String())
		}
	}
}

// TestSummaryDSF checks the DSF line: printed only when the results carry
// dsf_ratio, with the per-table range only over several tables.
func TestSummaryDSF(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra map[string]float64
		want  string // "" : no DSF line
	}{
		{"absent", map[string]float64{"ndcg_k": 32}, ""},
		{"one table", map[string]float64{"dsf_ratio": 0.25, "dsf_ratio.t0": 0.25},
			"DSF ratio    25.0% of lookups are distinct rows of their batch, measured at load\n"},
		{"tables", map[string]float64{"dsf_ratio": 0.5, "dsf_ratio.t0": 0.125, "dsf_ratio.t1": 0.875},
			"DSF ratio    50.0% of lookups are distinct rows of their batch (2 tables: 12.5%–87.5%), measured at load\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := fixedResults()
			r.Metrics.Extra = tc.extra
			var b bytes.Buffer
			Write(&b, r)
			got := b.String()
			if tc.want == "" {
				if strings.Contains(got, "DSF") {
					t.Fatalf("a DSF line without dsf_ratio:\n%s", got)
				}
				return
			}
			if !strings.Contains(got, tc.want) {
				t.Fatalf("want line %q in:\n%s", tc.want, got)
			}
		})
	}
}

// TestSummaryCompression: low-precision host tables add one line under
// the memory table with the three compression factors; FP32 tables none.
func TestSummaryCompression(t *testing.T) {
	r := fixedResults()
	var b bytes.Buffer
	Write(&b, r)
	if strings.Contains(b.String(), "compression") {
		t.Errorf("FP32 run shows a compression line:\n%s", b.String())
	}
	r.MemoryCompression = &results.MemoryCompression{Precision: "int4", Storage: "packed", Eq3: 0.140625, Counted: 0.140625, Measured: 0.1412}
	b.Reset()
	Write(&b, r)
	want := "compression  host tables int4 packed: 0.1406 of FP32 by Eq. 2–3, 0.1406 counted, 0.1412 measured"
	if !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
	if strings.Contains(b.String(), "with the cache") {
		t.Errorf("a run whose policy declares no cache memory shows an Eq. 2 line:\n%s", b.String())
	}
	r.MemoryCompression.Eq2, r.MemoryCompression.CacheBytes = 0.3238, 3<<20
	b.Reset()
	Write(&b, r)
	want = "\n             with the cache: 0.3238 of FP32 by Eq. 2 (3.09×; the cache 3.0 MiB: FP32 rows, tags, counts as its policy declares)\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
}
