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

// accRun is a bench run at point with an accuracy drop, its tables at
// precision (FP32: no memory_compression).
func accRun(graph string, drop, eq3 float64, point ...string) bench.Run {
	res := &results.Results{Graph: graph, Stages: []results.Stage{{Name: "s", Kind: "k"}}}
	if eq3 < 1 {
		res.MemoryCompression = &results.MemoryCompression{Precision: "int8", Storage: "packed", Eq3: eq3}
	}
	return bench.Run{Graph: graph, Point: point, AccuracyDropPct: &drop, Results: res}
}

// Runs that differ only in the seed are one point, their mean with the
// min and max as its bar; a line joins the precisions of one graph at one
// point, ordered by memory.
func TestAccuracyFigurePoints(t *testing.T) {
	b := &bench.Comparison{Kind: bench.Kind, Runs: []bench.Run{
		accRun("c", 0.4, 0.375, "seed=1", "embedding.precision=int8", "embedding.rounding=nearest"),
		accRun("c", 0.1, 0.375, "seed=2", "embedding.precision=int8", "embedding.rounding=nearest"),
		accRun("c", 1.0, 0.25, "seed=1", "embedding.precision=int4", "embedding.rounding=nearest"),
		accRun("c", 0.2, 0.375, "seed=1", "embedding.precision=int8", "embedding.rounding=stochastic"),
	}}
	series, lowprec := collectAccuracy([]*bench.Comparison{b})
	if !lowprec || len(series) != 2 {
		t.Fatalf("%d lines (low precision %v), want 2", len(series), lowprec)
	}
	if series[0].label != "c rounding=nearest" || series[1].label != "c rounding=stochastic" {
		t.Errorf("labels %q, %q", series[0].label, series[1].label)
	}
	e := series[0].points()
	if !slices.Equal(e.XYs, plotter.XYs{{X: 0.25, Y: 1.0}, {X: 0.375, Y: 0.25}}) {
		t.Errorf("points %v, want INT4 (0.25, 1) then INT8 (0.375, mean 0.25)", e.XYs)
	}
	if lo, hi := e.YErrors[1].Low, e.YErrors[1].High; math.Abs(lo-0.15) > 1e-12 || math.Abs(hi-0.15) > 1e-12 {
		t.Errorf("INT8 bar −%g +%g, want ±0.15 (seeds 0.1 and 0.4)", lo, hi)
	}
	dir := t.TempDir()
	written, err := Draw(&Input{Benches: []*bench.Comparison{b}}, dir, []string{"png"})
	if err != nil || !slices.Contains(written, filepath.Join(dir, "accuracy.png")) {
		t.Errorf("Draw wrote %v (%v), want accuracy.png", written, err)
	}
}

// Without low-precision tables (an FP32 comparison with its drops of 0)
// there is no trade-off to draw.
func TestAccuracyFigureNeedsLowPrecision(t *testing.T) {
	b := &bench.Comparison{Kind: bench.Kind, Runs: []bench.Run{accRun("a", 0, 1), accRun("b", 0, 1)}}
	if _, ok := accuracyFigure([]*bench.Comparison{b}); ok {
		t.Error("drew an accuracy figure of FP32 runs")
	}
}
