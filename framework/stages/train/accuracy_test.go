package train

import (
	"math"
	"testing"
)

// Accuracy thresholds at 0.5 (p ≥ 0.5 predicts 1); a NaN score predicts
// 0; no samples has none.
func TestEvaluateAccuracy(t *testing.T) {
	nan := float32(math.NaN())
	for _, c := range []struct {
		name           string
		scores, labels []float32
		want           float64
	}{
		{"all right", []float32{0.1, 0.9}, []float32{0, 1}, 1},
		{"at the threshold", []float32{0.5, 0.4999, 0.5, 0.6}, []float32{1, 0, 0, 0}, 0.5},
		{"NaN predicts 0", []float32{nan, nan, 0.7}, []float32{0, 1, 1}, 2.0 / 3},
	} {
		if got := Evaluate(c.scores, c.labels).Accuracy; math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: accuracy %v, want %v", c.name, got, c.want)
		}
	}
	if got := accuracy(nil, nil); !math.IsNaN(got) {
		t.Errorf("no samples: accuracy %v, want NaN", got)
	}
}
