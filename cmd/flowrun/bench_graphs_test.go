package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/bench"
	"github.com/flowrun/flowrun/framework/clock"
)

// Small runs of the shipped graphs: few, small batches (ScratchPipe's
// window, 64 × 4 × 6 rows, fits in 5 % of 60000 rows).
var benchSmall = []string{"--set", "dataset.batches=6", "--set", "dataset.eval_batches=0", "--set", "dataset.rows=60000",
	"--set", "dataset.batch_size=64", "--set", "dataset.lookups=4"}

// readBench decodes the bench JSON file at path into rep.
func readBench(path string, rep *bench.Comparison) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, rep)
}

func scratchPipeGraphs() []string {
	var files []string
	for _, g := range []string{"no-cache", "static-cache", "strawman", "scratchpipe"} {
		files = append(files, filepath.Join(repoGraphs, g+".yaml"))
	}
	return files
}

// flowrun bench runs the graphs on the same data: the same digest, a
// speedup over the first graph on both clocks, cache figures for the
// cached ones; the table labels modeled figures.
func TestBenchGraphs(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bench.json")
	args := append(append([]string{"bench"}, scratchPipeGraphs()...), append(benchSmall, "--out", out)...)
	r := mustFlowrun(t, args...)
	for _, want := range []string{"modeled ms/batch", "speedup modeled", "no-cache", "scratchpipe", "same model digest"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table without %q:\n%s", want, r.stdout)
		}
	}
	var rep bench.Comparison
	if err := readBench(out, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Kind != bench.Kind || rep.Baseline != "no-cache" || len(rep.Runs) != 4 || !rep.DigestsEqual {
		t.Fatalf("report %+v", rep)
	}
	for i, run := range rep.Runs {
		if run.Error != "" || run.Batches != 6 || run.IterationMs.Wall <= 0 || run.IterationMs.Modeled <= 0 ||
			run.Speedup == nil || run.Speedup.Modeled <= 0 || run.Results == nil || run.Digest != rep.Runs[0].Digest {
			t.Errorf("run %d: %+v", i, run)
		}
		if cached := i > 0; cached != (run.HitRate != nil) {
			t.Errorf("run %s: hit rate %v", run.Graph, run.HitRate)
		}
	}
	if s := rep.Runs[0].Speedup; s.Wall != 1 || s.Modeled != 1 {
		t.Errorf("baseline speedup %+v, want 1", s)
	}
	if rep.Runs[3].LinkBytesPerBatch["to_device"] <= 0 {
		t.Errorf("scratchpipe moved nothing: %+v", rep.Runs[3])
	}
}

// --sweep runs each graph per value; a point where a graph is invalid gets
// a row with the reason, the other runs still run, and the exit is 1.
func TestBenchSweep(t *testing.T) {
	graphs := []string{filepath.Join(repoGraphs, "no-cache.yaml"), filepath.Join(repoGraphs, "scratchpipe.yaml")}
	args := append(append([]string{"bench"}, graphs...), append(benchSmall, "--sweep", "cache.size=0.01,0.5", "--json")...)
	r := flowrun(t, args...)
	if r.err == nil || !strings.Contains(r.err.Error(), "1 of 4 runs failed") {
		t.Fatalf("err %v, want one failed run", r.err)
	}
	var rep bench.Comparison
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v in %q", err, r.stdout)
	}
	if len(rep.Runs) != 4 || len(rep.Sweep) != 1 || rep.Sweep[0].Key != "cache.size" {
		t.Fatalf("report %+v", rep)
	}
	// 1 % of 60000 rows cannot hold the scratchpad's window (1536 rows).
	if bad := rep.Runs[1]; bad.Error == "" || bad.Point[0] != "cache.size=0.01" || bad.Graph != "scratchpipe" {
		t.Errorf("run %+v, want the rejected scratchpad", bad)
	}
	if ok := rep.Runs[3]; ok.Error != "" || ok.HitRate == nil || ok.Point[0] != "cache.size=0.5" || ok.Speedup == nil {
		t.Errorf("run %+v", ok)
	}
}

func TestBenchUsage(t *testing.T) {
	for _, args := range [][]string{
		{"bench"},
		{"bench", filepath.Join(repoGraphs, "no-cache.yaml"), "--sweep", "cache.size"},
		{"bench", filepath.Join(repoGraphs, "no-cache.yaml"), "--sweep", "a=1", "--sweep", "a=2"},
		{"bench", filepath.Join(repoGraphs, "no-cache.yaml"), "--json", "-q"},
		{"bench", filepath.Join(repoGraphs, "no-cache.yaml"), "--set", "dataset.batches=-1"},
	} {
		r := flowrun(t, args...)
		var ue usageError
		if !errors.As(r.err, &ue) {
			t.Errorf("%v: err %v, want a usage error", args, r.err)
		}
	}
}

// The modeled timeline the runtime hands bench is the one behind the run's
// modeled iteration time: with no warm-up left out it gives that figure.
func TestBenchWarmupMatchesRuntime(t *testing.T) {
	for _, path := range scratchPipeGraphs() {
		var sets []string
		for i := 1; i < len(benchSmall); i += 2 {
			sets = append(sets, benchSmall[i])
		}
		sets = append(sets, "dataset.eval_batches=2")
		g, err := validateGraph(path, sets, true)
		if err != nil {
			t.Fatal(err)
		}
		var m *bench.Modeled
		f := runFlags{quiet: true, hazards: "off", modeled: func(tl *clock.Timeline, la int) { m = modeledSchedule(tl, la) }}
		res, err := runValidated(context.Background(), g, path, f, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if m == nil {
			t.Fatalf("%s: no modeled timeline handed over", path)
		}
		batches := m.Batches
		if batches != 8 {
			t.Fatalf("%s: %d batches in the modeled timeline, want 6 + 2 held-out", path, batches)
		}
		got := m.IterationMs(1, batches-1)
		if diff := got - res.IterationMs.Modeled; diff > 1e-9 || diff < -1e-9 {
			t.Errorf("%s: modeled iteration %g ms over batches 1 to the last, %g ms in the results", filepath.Base(path), got, res.IterationMs.Modeled)
		}
		// The last lookahead+1 batches are left out (none without a
		// lookahead).
		tail := 0
		if m.Lookahead > 0 {
			tail = m.Lookahead + 1
		}
		if _, err := m.SteadyMs(batches - tail); err == nil {
			t.Errorf("%s: a warm-up leaving no batch accepted", path)
		}
		if v, err := m.SteadyMs(batches - tail - 1); err != nil || v <= 0 {
			t.Errorf("%s: a warm-up leaving one batch: %v, %v", path, v, err)
		}
	}
}

// --warmup puts the modeled iteration after warm-up in the table and the
// JSON, and bases the modeled speedup on it.
func TestBenchWarmup(t *testing.T) {
	graphs := scratchPipeGraphs()[2:]
	r := mustFlowrun(t, append(append([]string{"bench"}, graphs...), append(benchSmall, "--warmup", "2", "--json")...)...)
	var rep bench.Comparison
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Warmup != 2 || len(rep.Runs) != 2 {
		t.Fatalf("report %+v", rep)
	}
	for _, run := range rep.Runs {
		if run.Error != "" || run.ModeledAfterWarmupMs <= 0 {
			t.Errorf("run %+v", run)
		}
	}
	if s, a, b := rep.Runs[1].Speedup.Modeled, rep.Runs[0].ModeledAfterWarmupMs, rep.Runs[1].ModeledAfterWarmupMs; s != a/b {
		t.Errorf("modeled speedup %g, want %g/%g", s, a, b)
	}
	r = mustFlowrun(t, append(append([]string{"bench"}, graphs...), append(benchSmall, "--warmup", "2")...)...)
	if !strings.Contains(r.stdout, "modeled ms/batch (after 2)") {
		t.Errorf("table:\n%s", r.stdout)
	}
}

// The modeled clock holds each device for what the stages charged to it:
// in ScratchPipe's graph the host's busy time is the host work collect,
// insert and train charged (results' per-stage device times), not the
// whole time of every stage that names the host; and holding each device
// for its part makes the pipeline no slower.
func TestModeledClockHoldsWhatWasCharged(t *testing.T) {
	t.Parallel()
	graph := scratchPipeGraphs()[3]
	res := runResults(t, graph, benchSmall...)
	charged := map[string]float64{}
	for _, p := range res.Primitives {
		if p.Stage == "exchange" {
			continue // charged to the gpu, held on the link (link:gpu)
		}
		for dev, ms := range p.DeviceBusyMs {
			charged[dev] += ms * 1e6
		}
	}
	if res.ModeledClock == nil || len(res.ModeledClock.Resources) == 0 {
		t.Fatalf("no modeled clock resources: %+v", res.ModeledClock)
	}
	var named float64 // the whole time of every stage naming the host
	for _, s := range res.ModeledClock.Stages {
		if s.Name == "collect" || s.Name == "insert" || s.Name == "train" {
			named += float64(s.BusyNs)
		}
	}
	for _, u := range res.ModeledClock.Resources {
		if u.Name != "host" && u.Name != "gpu" {
			continue
		}
		if diff := float64(u.BusyNs) - charged[u.Name]; diff > 1e3 || diff < -1e3 {
			t.Errorf("%s busy %d ns on the modeled clock, %.0f ns charged to it", u.Name, u.BusyNs, charged[u.Name])
		}
		if float64(u.BusyNs) >= named {
			t.Errorf("%s busy %d ns: as long as the stages naming it (%.0f ns)", u.Name, u.BusyNs, named)
		}
	}
}

// bench --shadows sweeps the demo's cache by shadows in one run, and each
// point's hit rate, misses and evictions equal those of the full run at
// that point (bench without --shadows).
func TestBenchSweepShadowsEqualFullRuns(t *testing.T) {
	sweep := []string{"--sweep", "cache.plugin=builtin:lru,builtin:lfu,builtin:belady", "--sweep", "cache.size=0.02,0.1"}
	var shadow, full bench.Comparison
	for _, c := range []struct {
		extra []string
		rep   *bench.Comparison
	}{{[]string{"--shadows"}, &shadow}, {nil, &full}} {
		out := filepath.Join(t.TempDir(), "bench.json")
		args := append(append([]string{"bench", demo, "--set", "dataset.batches=12", "--quiet", "--out", out}, sweep...), c.extra...)
		mustFlowrun(t, args...)
		if err := readBench(out, c.rep); err != nil {
			t.Fatal(err)
		}
	}
	if shadow.SweptBy != bench.SweptByShadows || full.SweptBy != "" {
		t.Fatalf("swept by %q (%s) and %q", shadow.SweptBy, shadow.SweepNote, full.SweptBy)
	}
	if len(shadow.Runs) != 6 || len(full.Runs) != 6 {
		t.Fatalf("%d and %d rows, want 6", len(shadow.Runs), len(full.Runs))
	}
	for i, s := range shadow.Runs {
		f := full.Runs[i]
		if !s.FromShadows || s.Shadow == nil || s.HitRate == nil || f.HitRate == nil || f.Results == nil || f.Results.Cache == nil {
			t.Fatalf("point %v: shadow %+v, full %+v", s.Point, s, f)
		}
		fc := f.Results.Cache
		if strings.Join(s.Point, " ") != strings.Join(f.Point, " ") || *s.HitRate != *f.HitRate ||
			s.Shadow.Misses != fc.Misses || s.Shadow.Evictions != fc.Evictions || s.Batches != f.Batches {
			t.Errorf("point %v: shadow hit rate %v misses %d evictions %d; full run %v %d %d",
				s.Point, *s.HitRate, s.Shadow.Misses, s.Shadow.Evictions, *f.HitRate, fc.Misses, fc.Evictions)
		}
	}
}
