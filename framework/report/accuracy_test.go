package report

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"gonum.org/v1/plot/plotter"

	"github.com/flowrun/flowrun/framework/bench"
	"github.com/flowrun/flowrun/framework/results"
)

// accRun is a bench run at point with a held-out accuracy and AUC, its
// tables at eq3 of FP32 (1: FP32, no memory_compression).
func accRun(graph string, acc, auc, eq3 float64, point ...string) bench.Run {
	res := &results.Results{Graph: graph, Stages: []results.Stage{{Name: "s", Kind: "k"}}}
	res.Metrics.Accuracy, res.Metrics.AUC = &acc, &auc
	if eq3 < 1 {
		res.MemoryCompression = &results.MemoryCompression{Precision: "int8", Storage: "packed", Eq3: eq3}
	}
	return bench.Run{Graph: graph, Point: point, Results: res}
}

// Each run is compared with the first graph's run at its point; runs that
// differ only in the seed are one point, their mean with the min and max
// as its bar; a line joins the precisions of one graph at one point,
// ordered by memory.
func TestAccuracyFigurePoints(t *testing.T) {
	pt := func(seed, prec, rnd string) []string {
		return []string{"seed=" + seed, "embedding.precision=" + prec, "embedding.rounding=" + rnd}
	}
	b := &bench.Comparison{Kind: bench.Kind, Graphs: []string{"ref.yaml", "c.yaml"}, Runs: []bench.Run{
		accRun("ref", 0.8, 0.9, 1, pt("1", "int8", "nearest")...), accRun("c", 0.796, 0.9, 0.375, pt("1", "int8", "nearest")...),
		accRun("ref", 0.5, 0.8, 1, pt("2", "int8", "nearest")...), accRun("c", 0.4995, 0.792, 0.375, pt("2", "int8", "nearest")...),
		accRun("ref", 0.8, 0.9, 1, pt("1", "int4", "nearest")...), accRun("c", 0.792, 0.9, 0.25, pt("1", "int4", "nearest")...),
		accRun("ref", 0.8, 0.9, 1, pt("1", "int8", "stochastic")...), accRun("c", 0.8, 0.9, 0.375, pt("1", "int8", "stochastic")...),
	}}
	series, lowprec := collectAccuracy([]*bench.Comparison{b})
	if !lowprec || len(series) != 2 {
		t.Fatalf("%d lines (low precision %v), want 2", len(series), lowprec)
	}
	if series[0].label != "c rounding=nearest" || series[1].label != "c rounding=stochastic" {
		t.Errorf("labels %q, %q", series[0].label, series[1].label)
	}
	near := func(a, b plotter.XYs) bool {
		return len(a) == len(b) && !slices.ContainsFunc(a, func(p plotter.XY) bool {
			i := slices.Index(a, p)
			return math.Abs(p.X-b[i].X) > 1e-9 || math.Abs(p.Y-b[i].Y) > 1e-9
		})
	}
	// Accuracy: INT4 1 %; INT8 seeds 0.5 % and 0.1 %. AUC: INT4 0; INT8 0 and 1 %.
	acc, auc := series[0].points(false), series[0].points(true)
	if want := (plotter.XYs{{X: 0.25, Y: 1}, {X: 0.375, Y: 0.3}}); !near(acc.XYs, want) {
		t.Errorf("accuracy points %v, want %v", acc.XYs, want)
	}
	if want := (plotter.XYs{{X: 0.25, Y: 0}, {X: 0.375, Y: 0.5}}); !near(auc.XYs, want) {
		t.Errorf("AUC points %v, want %v", auc.XYs, want)
	}
	if lo, hi := acc.YErrors[1].Low, acc.YErrors[1].High; math.Abs(lo-0.2) > 1e-9 || math.Abs(hi-0.2) > 1e-9 {
		t.Errorf("INT8 accuracy bar −%g +%g, want ±0.2 (seeds 0.5 and 0.1)", lo, hi)
	}
	dir := t.TempDir()
	written, err := Draw(&Input{Benches: []*bench.Comparison{b}}, dir, []string{"png"})
	if err != nil || !slices.Contains(written, filepath.Join(dir, "accuracy.png")) {
		t.Errorf("Draw wrote %v (%v), want accuracy.png", written, err)
	}
}

// Without low-precision tables (an FP32 comparison) there is no trade-off
// to draw, nor with one graph (nothing to compare with).
func TestAccuracyFigureNeedsLowPrecision(t *testing.T) {
	fp32 := &bench.Comparison{Kind: bench.Kind, Graphs: []string{"a", "b"}, Runs: []bench.Run{accRun("a", 0.7, 0.8, 1), accRun("b", 0.7, 0.8, 1)}}
	one := &bench.Comparison{Kind: bench.Kind, Graphs: []string{"a"}, Runs: []bench.Run{accRun("a", 0.7, 0.8, 0.3), accRun("a", 0.6, 0.8, 0.3)}}
	for _, b := range []*bench.Comparison{fp32, one} {
		if _, ok := accuracyFigure([]*bench.Comparison{b}); ok {
			t.Errorf("drew an accuracy figure of %v", b.Graphs)
		}
	}
}
