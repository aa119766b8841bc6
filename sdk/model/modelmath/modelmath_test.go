package modelmath

import (
	"math"
	"slices"
	"testing"
)

// TestLoss: the mean BCE, scores and gradient of a small batch, with
// logits far out on both sides, and the same bits when dz is the logits'
// own memory.
func TestLoss(t *testing.T) {
	logits := []float32{0, 2, -3, 100, -100}
	labels := []float32{1, 0, 0, 1, 1}
	scores := make([]float32, len(logits))
	dz := make([]float32, len(logits))
	loss := Loss(logits, labels, scores, dz)

	var want float64
	for i, z := range logits {
		p := 1 / (1 + math.Exp(-float64(z)))
		if math.Abs(float64(scores[i])-p) > 1e-7 {
			t.Errorf("score %d: %v, want %v", i, scores[i], p)
		}
		if g := (p - float64(labels[i])) / 5; math.Abs(float64(dz[i])-g) > 1e-7 {
			t.Errorf("dz %d: %v, want %v", i, dz[i], g)
		}
		want += math.Log1p(math.Exp(float64(z))) - float64(labels[i])*float64(z)
	}
	if want /= 5; math.Abs(loss-want) > 1e-12*math.Abs(want) {
		t.Errorf("loss %v, want %v", loss, want)
	}

	inPlace := slices.Clone(logits)
	if l := Loss(inPlace, labels, nil, inPlace); l != loss || !slices.Equal(inPlace, dz) {
		t.Errorf("in place: loss %v, dz %v; apart: %v, %v", l, inPlace, loss, dz)
	}
}

// TestUniform: draws lie in [0, 1), depend on the seed, and are the
// splitmix64 stream (its first output for seed 0 is 0xe220a8397b1dcdaf).
func TestUniform(t *testing.T) {
	if got, want := Uniform(0, 0), float64(uint64(0xe220a8397b1dcdaf)>>11)/(1<<53); got != want {
		t.Errorf("Uniform(0, 0) = %v, want %v", got, want)
	}
	if Uniform(1, 0) == Uniform(2, 0) {
		t.Error("seeds 1 and 2 draw the same first value")
	}
	for i := range uint64(1000) {
		if u := Uniform(7, i); !(u >= 0 && u < 1) {
			t.Fatalf("draw %d = %v outside [0, 1)", i, u)
		}
	}
}
