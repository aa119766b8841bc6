package bench

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// Each run's accuracy drop is Eq. 1 of the mixed-precision paper against
// the first graph at its point; the table shows it only when runs have
// one.
func TestAccuracyDrop(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	c := &Comparison{Baseline: "fp32", Runs: []Run{
		{Graph: "fp32", Accuracy: f(0.8)}, {Graph: "int8", Accuracy: f(0.79)}, {Graph: "none"},
		{Graph: "fp32", Accuracy: f(0.5)}, {Graph: "int8", Accuracy: f(0.51)}, {Graph: "none"},
	}}
	for i := range c.Runs {
		c.Runs[i].IterationMs.Wall = 1
	}
	c.speedups(3)
	for i, want := range []float64{0, 1.25, math.NaN(), 0, -2, math.NaN()} {
		got := c.Runs[i].AccuracyDropPct
		if math.IsNaN(want) != (got == nil) || (got != nil && math.Abs(*got-want) > 1e-9) {
			t.Errorf("run %d: drop %v, want %v", i, got, want)
		}
	}
	var b bytes.Buffer
	WriteTable(&b, c)
	for _, s := range []string{"acc drop", "+1.250%", "-2.000%", "0.7900", "Eq. 1"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, b.String())
		}
	}
	plain := &Comparison{Baseline: "a", Runs: []Run{{Graph: "a"}, {Graph: "b"}}}
	plain.speedups(2)
	b.Reset()
	WriteTable(&b, plain)
	if strings.Contains(b.String(), "acc drop") {
		t.Errorf("a table without accuracies shows the column:\n%s", b.String())
	}
}
