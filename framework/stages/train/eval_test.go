package train

import (
	"math"
	"testing"
)

func TestEvaluateAUC(t *testing.T) {
	cases := []struct {
		name           string
		scores, labels []float32
		auc            float64
	}{
		{"perfect", []float32{0.1, 0.2, 0.8, 0.9}, []float32{0, 0, 1, 1}, 1},
		{"inverted", []float32{0.9, 0.8, 0.2, 0.1}, []float32{0, 0, 1, 1}, 0},
		{"all tied", []float32{0.5, 0.5, 0.5, 0.5}, []float32{0, 1, 0, 1}, 0.5},
		// pairs (pos, neg): (0.4 vs 0.1) win, (0.4 vs 0.6) lose, (0.8 vs both) win → 3/4
		{"mixed", []float32{0.1, 0.4, 0.6, 0.8}, []float32{0, 1, 0, 1}, 0.75},
	}
	for _, c := range cases {
		if got := Evaluate(c.scores, c.labels).AUC; math.Abs(got-c.auc) > 1e-12 {
			t.Errorf("%s: AUC %v, want %v", c.name, got, c.auc)
		}
	}
}

func TestEvaluateLogLossAndNE(t *testing.T) {
	// Predicting the base rate everywhere has NE exactly 1.
	scores := []float32{0.25, 0.25, 0.25, 0.25}
	labels := []float32{1, 0, 0, 0}
	e := Evaluate(scores, labels)
	want := -(0.25*math.Log(0.25) + 0.75*math.Log(0.75))
	if math.Abs(e.LogLoss-want) > 1e-6 || math.Abs(e.NE-1) > 1e-6 {
		t.Fatalf("logloss %v (want %v), NE %v (want 1)", e.LogLoss, want, e.NE)
	}
	if e := Evaluate([]float32{0.3, 0.7}, []float32{1, 1}); !math.IsNaN(e.AUC) {
		t.Fatalf("one-class AUC %v, want NaN", e.AUC)
	}
}

// A diverged model scores NaN: evaluating it must end.
func TestEvaluateNaNScores(t *testing.T) {
	nan := float32(math.NaN())
	e := Evaluate([]float32{nan, 0.5, nan, 0.2}, []float32{1, 0, 0, 1})
	if !math.IsNaN(e.LogLoss) {
		t.Errorf("logloss %v, want NaN", e.LogLoss)
	}
}
