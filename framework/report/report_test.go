package report

import (
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/bench"
	"github.com/flowrun/flowrun/framework/results"
)

func TestNiceTicks(t *testing.T) {
	var labels []string
	for _, tk := range (niceTicks{}).Ticks(0, 1.3) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if !slices.Equal(labels, []string{"0", "0.25", "0.5", "0.75", "1", "1.25"}) {
		t.Errorf("ticks %v", labels)
	}
}

// Runs from several files are labelled by file; runs that still share a
// label get their position, the file named once.
func TestReportLabels(t *testing.T) {
	dir := t.TempDir()
	run := func(graph string) *results.Results {
		return &results.Results{Graph: graph, Stages: []results.Stage{{Name: "s", Kind: "k"}}}
	}
	path := filepath.Join(dir, "bench.json")
	rep := bench.Comparison{Kind: bench.Kind, Runs: []bench.Run{{Graph: "a", Results: run("a")}, {Graph: "a", Results: run("a")}}}
	if err := results.WriteJSON(path, rep); err != nil {
		t.Fatal(err)
	}
	res := filepath.Join(dir, "r.json")
	if err := run("b").Write(res); err != nil {
		t.Fatal(err)
	}
	label := func(paths ...string) []string {
		in, err := Read(paths)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range in.Runs {
			got = append(got, r.Label)
		}
		return got
	}
	if got, want := label(path, res), []string{"a (bench) #1", "a (bench) #2", "b (r)"}; !slices.Equal(got, want) {
		t.Errorf("labels %q, want %q", got, want)
	}
	if got, want := label(path), []string{"a (bench) #1", "a (bench) #2"}; !slices.Equal(got, want) {
		t.Errorf("one file: labels %q, want %q", got, want)
	}
}

// A file that is neither a results.json nor a comparison is refused.
func TestReadRejects(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.json")
	os.WriteFile(path, []byte(`{"a": 1}`), 0o644)
	if _, err := Read([]string{path}); err == nil || !strings.Contains(err.Error(), "neither a results.json") {
		t.Errorf("err %v", err)
	}
}

// fixedRun is a run of graph with two stages on both clocks and a loss
// curve that falls by step per batch.
func fixedRun(graph string, step float64) *results.Results {
	loss := &results.LossCurve{}
	for b := range 5 {
		loss.Points = append(loss.Points, results.Point{Batch: uint64(b), Value: 0.7 - step*float64(b)})
	}
	return &results.Results{Graph: graph, IterationMs: results.Iteration{Wall: 3, Modeled: 1.5},
		Stages: []results.Stage{
			{Name: "plan", Kind: "p", WallMs: results.Percentiles{Mean: 1}},
			{Name: "train", Kind: "t", WallMs: results.Percentiles{Mean: 2}, ModeledMs: &results.Percentiles{Mean: 1.5}},
		},
		Metrics: results.Metrics{Loss: loss}}
}

// fixedSweep is a comparison of two graphs over a cache.size sweep.
func fixedSweep() *bench.Comparison {
	hr := func(v float64) *float64 { return &v }
	c := &bench.Comparison{Kind: bench.Kind, Graphs: []string{"a.yaml", "b.yaml"}, Baseline: "a",
		Sweep: []bench.Sweep{{Key: "cache.size", Values: []string{"0.05", "0.2"}}}}
	for i, pt := range []string{"cache.size=0.05", "cache.size=0.2"} {
		c.Runs = append(c.Runs,
			bench.Run{Graph: "a", Point: []string{pt}, Speedup: &bench.Speedup{Wall: 1, Modeled: 1}, HitRate: hr(0.3 + 0.2*float64(i)), Results: fixedRun("a", 0.01)},
			bench.Run{Graph: "b", Point: []string{pt}, Speedup: &bench.Speedup{Wall: 1.5, Modeled: 2 + float64(i)}, HitRate: hr(0.4 + 0.2*float64(i)), Results: fixedRun("b", 0.01)})
	}
	return c
}

// Draw writes every figure its input has data for, in each format asked
// for, and labels modeled figures modeled.
func TestDraw(t *testing.T) {
	dir := t.TempDir()
	in := &Input{Runs: []Run{{Label: "x", Res: fixedRun("x", 0.02)}}, Benches: []*bench.Comparison{fixedSweep(), fixedSweep()}}
	for _, r := range fixedSweep().Runs {
		in.Runs = append(in.Runs, Run{Label: r.Graph + " " + shortPoint(r.Point), Res: r.Results})
	}
	written, err := Draw(in, dir, []string{"png", "svg"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range written {
		got = append(got, filepath.Base(w))
	}
	want := []string{"breakdown.png", "breakdown.svg", "speedup.png", "speedup.svg", "speedup-2.png", "speedup-2.svg",
		"hitrate.png", "hitrate.svg", "loss.png", "loss.svg"}
	if !slices.Equal(got, want) {
		t.Fatalf("wrote %v, want %v", got, want)
	}
	f, err := os.Open(filepath.Join(dir, "breakdown.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 300 {
		t.Errorf("breakdown.png is %v", b)
	}
	for _, name := range []string{"breakdown.svg", "speedup.svg"} {
		svg, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, word := range []string{"<svg", "modeled", "wall"} {
			if !strings.Contains(string(svg), word) {
				t.Errorf("%s without %q", name, word)
			}
		}
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "loss.svg"))
	if !strings.Contains(string(svg), "identical curves drawn once") {
		t.Error("loss.svg: the comparison's identical curves are not drawn once")
	}
}

// The same input draws the same bytes.
func TestDrawDeterministic(t *testing.T) {
	in := &Input{Benches: []*bench.Comparison{fixedSweep()}}
	var files [2][]byte
	for i := range files {
		dir := t.TempDir()
		if _, err := Draw(in, dir, []string{"svg"}); err != nil {
			t.Fatal(err)
		}
		var err error
		if files[i], err = os.ReadFile(filepath.Join(dir, "hitrate.svg")); err != nil {
			t.Fatal(err)
		}
	}
	if string(files[0]) != string(files[1]) {
		t.Error("hitrate.svg differs between two draws of the same input")
	}
}

func TestDrawNothing(t *testing.T) {
	in := &Input{Runs: []Run{{Label: "x", Res: &results.Results{Graph: "x"}}}}
	if _, err := Draw(in, t.TempDir(), []string{"png"}); !errors.Is(err, ErrNothingToDraw) {
		t.Errorf("err %v, want ErrNothingToDraw", err)
	}
}

// The hit-rate figure gives every line its own colour (two graphs at the
// same point used to share one) and ends its x axis at the largest size
// swept.
func TestHitRateFigureColoursAndAxis(t *testing.T) {
	_, h := collectHitRates([]*bench.Comparison{fixedSweep()})
	if len(h.all) != 2 {
		t.Fatalf("%d lines, want 2", len(h.all))
	}
	if h.colour(h.all[0]) == h.colour(h.all[1]) {
		t.Errorf("both lines %v", h.colour(h.all[0]))
	}
	fig, ok := hitRateFigure([]*bench.Comparison{fixedSweep()})
	if !ok {
		t.Fatal("no figure")
	}
	if x := fig.plots[0].X; x.Min != 0 || x.Max != 20 {
		t.Errorf("x axis %g..%g, want 0..20 (the sweep's 0.05 and 0.2 in %%)", x.Min, x.Max)
	}
}

// Speedup labels keep the digits that tell 1.01× from 1×.
func TestSpeedupLabel(t *testing.T) {
	for v, want := range map[float64]string{1.01: "1.01×", 1: "1.00×", 0.37: "0.37×", 12.34: "12.3×", 250.4: "250×"} {
		if got := speedupLabel(v); got != want {
			t.Errorf("speedupLabel(%g) = %q, want %q", v, got, want)
		}
	}
}
