package bench

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flowrun/framework/internal/golden"
	"github.com/flowrun/flowrun/framework/results"
)

// fakeRunner checks graphs with CheckF; a nil CheckF finds every graph in
// graphs, by path.
type fakeRunner struct {
	graphs map[string]*fakeGraph
	CheckF func(path string, sets []string) (Graph, error)
	// checked records every Check's overrides, in order.
	checked [][]string
}

func (f *fakeRunner) Check(path string, sets []string) (Graph, error) {
	f.checked = append(f.checked, sets)
	if f.CheckF != nil {
		return f.CheckF(path, sets)
	}
	g, ok := f.graphs[path]
	if !ok {
		return nil, errors.New("no such graph")
	}
	return g, nil
}

// fakeGraph returns RunF's answer, or its fixed results.
type fakeGraph struct {
	name    string
	res     *results.Results
	modeled *Modeled
	RunF    func(ctx context.Context, modeled bool) (*results.Results, *Modeled, error)
	runs    int
}

func (g *fakeGraph) Name() string { return g.name }

func (g *fakeGraph) Run(ctx context.Context, modeled bool) (*results.Results, *Modeled, error) {
	g.runs++
	if g.RunF != nil {
		return g.RunF(ctx, modeled)
	}
	if !modeled {
		return g.res, nil, nil
	}
	return g.res, g.modeled, nil
}

// runResults are a run's results with the figures bench takes.
func runResults(graph string, wall, modeled float64, digest string, cache *results.Cache) *results.Results {
	return &results.Results{Graph: graph, Batches: 10, Digest: digest, Cache: cache,
		IterationMs: results.Iteration{Wall: wall, Modeled: modeled}}
}

// linear is a modeled schedule whose batch b leaves the graph at
// (b+1)·step ms, except the first, which takes first ms.
func linear(batches, lookahead int, first, step float64) *Modeled {
	return &Modeled{Batches: batches, Lookahead: lookahead, Completion: func(b int) int64 {
		return int64((first + float64(b)*step) * 1e6)
	}}
}

func TestSweepPoints(t *testing.T) {
	sw, err := ParseSweeps([]string{"a=1,2", "b= x , y "})
	if err != nil {
		t.Fatal(err)
	}
	got := Points(sw)
	want := [][]string{{"a=1", "b=x"}, {"a=1", "b=y"}, {"a=2", "b=x"}, {"a=2", "b=y"}}
	if len(got) != len(want) {
		t.Fatalf("points %v", got)
	}
	for i := range want {
		if strings.Join(got[i], " ") != strings.Join(want[i], " ") {
			t.Errorf("point %d: %v, want %v", i, got[i], want[i])
		}
	}
	if p := Points(nil); len(p) != 1 || len(p[0]) != 0 {
		t.Errorf("no sweep: %v", p)
	}
}

func TestParseSweepsRejects(t *testing.T) {
	for _, flags := range [][]string{{"a"}, {"=1"}, {"a="}, {"a=1,,2"}, {"a=1", "a=2"}} {
		if _, err := ParseSweeps(flags); err == nil {
			t.Errorf("%q accepted", flags)
		}
	}
}

// Compare checks every graph before the first run, runs them in order,
// and sets the figures side by side: speedups over the first graph on
// both clocks, hit rate and bytes per batch where there is a cache, and
// whether the digests agree.
func TestCompare(t *testing.T) {
	cache := &results.Cache{HitRate: 0.5, LinkBytes: map[string]int64{"to_device": 1000, "to_host": 500}}
	r := &fakeRunner{graphs: map[string]*fakeGraph{
		"a.yaml": {name: "a", res: runResults("a", 8, 4, "d1", nil)},
		"b.yaml": {name: "b", res: runResults("b", 2, 1, "d1", cache)},
	}}
	var log bytes.Buffer
	c, err := Compare(context.Background(), r, Options{Graphs: []string{"a.yaml", "b.yaml"}, Sets: []string{"seed=3"}, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if c.Kind != Kind || c.Baseline != "a" || len(c.Runs) != 2 || !c.DigestsEqual || c.Failed() != 0 {
		t.Fatalf("comparison %+v", c)
	}
	if s := c.Runs[0].Speedup; s == nil || s.Wall != 1 || s.Modeled != 1 {
		t.Errorf("baseline speedup %+v, want 1", s)
	}
	if s := c.Runs[1].Speedup; s == nil || s.Wall != 4 || s.Modeled != 4 {
		t.Errorf("speedup %+v, want 4× on both clocks", s)
	}
	if b := c.Runs[1]; b.HitRate == nil || *b.HitRate != 0.5 || b.LinkBytesPerBatch["to_device"] != 100 || b.LinkBytesPerBatch["to_host"] != 50 {
		t.Errorf("cache figures %+v", b)
	}
	if c.Runs[0].HitRate != nil || c.Runs[0].LinkBytesPerBatch != nil {
		t.Errorf("figures of a cache without one: %+v", c.Runs[0])
	}
	if want := "bench [1/2] a.yaml\nbench [2/2] b.yaml\n"; log.String() != want {
		t.Errorf("log %q, want %q", log.String(), want)
	}
	for _, sets := range r.checked {
		if strings.Join(sets, " ") != "seed=3" {
			t.Errorf("checked with %q, want the --set overrides", sets)
		}
	}
}

// A sweep checks each graph at each point with the point's overrides after
// --set's; a graph invalid at a point gets a row with the reason, named
// after its file, and the others still run.
func TestCompareSweep(t *testing.T) {
	a := &fakeGraph{name: "a", res: runResults("a", 2, 2, "d", nil)}
	r := &fakeRunner{CheckF: func(path string, sets []string) (Graph, error) {
		if path == "dir/b.yaml" && sets[len(sets)-1] == "cache.size=0.01" {
			return nil, errors.New("too small\nsecond line")
		}
		return a, nil
	}}
	sweep := []Sweep{{Key: "cache.size", Values: []string{"0.01", "0.5"}}}
	c, err := Compare(context.Background(), r, Options{Graphs: []string{"dir/a.yaml", "dir/b.yaml"}, Sets: []string{"x=1"}, Sweep: sweep})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Runs) != 4 || c.Failed() != 1 || a.runs != 3 {
		t.Fatalf("%d runs, %d failed, %d ran: %+v", len(c.Runs), c.Failed(), a.runs, c.Runs)
	}
	bad := c.Runs[1]
	if bad.Graph != "b" || bad.Error != "too small\nsecond line" || bad.Point[0] != "cache.size=0.01" || bad.Speedup != nil {
		t.Errorf("invalid run %+v", bad)
	}
	if strings.Join(r.checked[0], " ") != "x=1 cache.size=0.01" {
		t.Errorf("checked with %q", r.checked[0])
	}
}

// Without a sweep an invalid graph is the caller's error, returned as is,
// and nothing runs.
func TestCompareInvalid(t *testing.T) {
	usage := errors.New("bad key")
	a := &fakeGraph{name: "a", res: runResults("a", 1, 1, "d", nil)}
	r := &fakeRunner{CheckF: func(path string, _ []string) (Graph, error) {
		if path == "b.yaml" {
			return nil, usage
		}
		return a, nil
	}}
	if _, err := Compare(context.Background(), r, Options{Graphs: []string{"a.yaml", "b.yaml"}}); !errors.Is(err, usage) {
		t.Errorf("err %v, want the check's", err)
	}
	if a.runs != 0 {
		t.Errorf("%d runs before every graph was checked", a.runs)
	}
}

// A run that fails gets a row with its error, and the digests of the
// others still count; different digests at one point are reported.
func TestCompareFailedAndDigests(t *testing.T) {
	r := &fakeRunner{graphs: map[string]*fakeGraph{
		"a": {name: "a", RunF: func(context.Context, bool) (*results.Results, *Modeled, error) { return nil, nil, errors.New("boom") }},
		"b": {name: "b", res: runResults("b", 1, 1, "d1", nil)},
		"c": {name: "c", res: runResults("c", 1, 1, "d2", nil)},
	}}
	c, err := Compare(context.Background(), r, Options{Graphs: []string{"a", "b", "c"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Runs[0].Error != "boom" || c.Failed() != 1 || c.DigestsEqual {
		t.Errorf("comparison %+v", c)
	}
	if c.Runs[1].Speedup != nil {
		t.Errorf("a speedup over a failed baseline: %+v", c.Runs[1].Speedup)
	}
}

// An interrupt stops the comparison with the run's error.
func TestCompareInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := errors.New("interrupted")
	r := &fakeRunner{graphs: map[string]*fakeGraph{
		"a": {name: "a", RunF: func(context.Context, bool) (*results.Results, *Modeled, error) {
			cancel()
			return nil, nil, stopped
		}},
		"b": {name: "b", res: runResults("b", 1, 1, "d", nil)},
	}}
	if _, err := Compare(ctx, r, Options{Graphs: []string{"a", "b"}}); !errors.Is(err, stopped) {
		t.Errorf("err %v, want the interrupted run's", err)
	}
	if n := r.graphs["b"].runs; n != 0 {
		t.Errorf("%d runs after the interrupt", n)
	}
}

// With a warm-up the runs hand over their modeled schedules, and the
// modeled speedup compares the batches after the warm-up.
func TestCompareWarmup(t *testing.T) {
	r := &fakeRunner{graphs: map[string]*fakeGraph{
		// a: 10 batches, 2 ms each after a 20 ms first; b: 1 ms each.
		"a": {name: "a", res: runResults("a", 1, 3, "d", nil), modeled: linear(10, 0, 20, 2)},
		"b": {name: "b", res: runResults("b", 1, 3, "d", nil), modeled: linear(10, 1, 20, 1)},
		// c: too short for its lookahead.
		"c": {name: "c", res: runResults("c", 1, 3, "d", nil), modeled: linear(4, 2, 20, 1)},
	}}
	c, err := Compare(context.Background(), r, Options{Graphs: []string{"a", "b", "c"}, Warmup: 2})
	if err != nil {
		t.Fatal(err)
	}
	a, b := c.Runs[0], c.Runs[1]
	if a.ModeledAfterWarmupMs != 2 || b.ModeledAfterWarmupMs != 1 {
		t.Errorf("after warm-up %g and %g ms, want 2 and 1", a.ModeledAfterWarmupMs, b.ModeledAfterWarmupMs)
	}
	if b.Speedup == nil || b.Speedup.Modeled != 2 {
		t.Errorf("modeled speedup %+v, want 2 (after warm-up, not the runs' equal figures)", b.Speedup)
	}
	if e := c.Runs[2].Error; !strings.HasPrefix(e, "modeled clock after warm-up: --warmup 2") {
		t.Errorf("short run: %q", e)
	}
}

// SteadyMs times from the first batch after the warm-up to the last one
// the end of the run leaves alone; IterationMs over all of them is the
// mean interval.
func TestModeledSteady(t *testing.T) {
	m := linear(10, 2, 5, 3)
	if got := m.IterationMs(1, 9); got != 3 {
		t.Errorf("iteration %g ms, want 3", got)
	}
	// Batches 2..6 (7, 8 and 9 overlap at the end): 4 intervals of 3 ms.
	if got, err := m.SteadyMs(2); err != nil || got != 3 {
		t.Errorf("steady %g, %v", got, err)
	}
	if _, err := m.SteadyMs(6); err != nil {
		t.Errorf("one batch left: %v", err)
	}
	if _, err := m.SteadyMs(7); err == nil {
		t.Error("a warm-up leaving no batch accepted")
	}
}

// fixedComparison is a swept comparison with a failed run, a cache and a
// warm-up: every kind of cell of the table.
func fixedComparison() *Comparison {
	hr := 0.425
	return &Comparison{
		Kind: Kind, Graphs: []string{"graphs/no-cache.yaml", "graphs/scratchpipe.yaml"}, Baseline: "no-cache",
		Sweep:  []Sweep{{Key: "cache.size", Values: []string{"0.01", "0.5"}}},
		Warmup: 2, WallMs: 1234.5, Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Runs: []Run{
			{Graph: "no-cache", File: "graphs/no-cache.yaml", Point: []string{"cache.size=0.01"}, Batches: 6,
				IterationMs: results.Iteration{Wall: 9.016, Modeled: 15.115}, ModeledAfterWarmupMs: 15.1,
				Speedup: &Speedup{Wall: 1, Modeled: 1}, Digest: "3040fe2076d6aa"},
			{Graph: "scratchpipe", File: "graphs/scratchpipe.yaml", Point: []string{"cache.size=0.01"},
				Error: "cache::size: too small\nthe window needs more"},
			{Graph: "no-cache", File: "graphs/no-cache.yaml", Point: []string{"cache.size=0.5"}, Batches: 6,
				IterationMs: results.Iteration{Wall: 8.753}, Speedup: &Speedup{Wall: 1}, Digest: "3040fe2076d6aa"},
			{Graph: "scratchpipe", File: "graphs/scratchpipe.yaml", Point: []string{"cache.size=0.5"}, Batches: 6,
				IterationMs: results.Iteration{Wall: 26.055, Modeled: 15.004}, ModeledAfterWarmupMs: 15.0,
				Speedup: &Speedup{Wall: 0.34}, HitRate: &hr,
				LinkBytesPerBatch: map[string]float64{"to_device": 65740.8, "to_host": 0}, Digest: "3040fe2076d6aa",
				Results: &results.Results{Cache: &results.Cache{Rows: 250000, ProfileRows: []int64{19938, 20035}}}},
		},
	}
}

// A run whose cache held only what its warm-up profile saw is named under
// the table, and only that run: its hit rate cannot grow with the cache.
func TestWriteTableProfileLimit(t *testing.T) {
	var b bytes.Buffer
	WriteTable(&b, fixedComparison())
	var lines []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "profile") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "scratchpipe cache.size=0.5") || !strings.Contains(lines[0], "20,035") {
		t.Errorf("profile lines %q, want one for scratchpipe at 0.5 naming 20,035 rows", lines)
	}
}

// TestWriteTableGolden prints the table of a fixed comparison and compares
// it with testdata/table.golden (-update rewrites it).
func TestWriteTableGolden(t *testing.T) {
	var b bytes.Buffer
	WriteTable(&b, fixedComparison())
	c := fixedComparison()
	c.Sweep, c.Warmup, c.DigestsEqual, c.Runs = nil, 0, true, c.Runs[2:]
	b.WriteString("--\n")
	WriteTable(&b, c)
	golden.Check(t, "table.golden", b.String())
}
