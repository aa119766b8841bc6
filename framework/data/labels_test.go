package data

import (
	"math"
	"slices"
	"testing"
)

// The label options change the labels only: the IDs and dense features of
// a batch are those of the same dataset without them. A negative offset
// makes positives rarer; noise is deterministic by batch, like everything
// else, and changes some labels; with both 0 the labeler is the teacher's
// plain Bernoulli(σ(3·score)).
func TestLabelOptions(t *testing.T) {
	d := dataset("zipf")
	d.BatchSize = 4096
	base, _ := NewSynthetic(3, d)
	a := fill(t, base, 5, false)
	rate := func(x Arrays) float64 {
		var n float64
		for _, y := range x.Labels {
			n += float64(y)
		}
		return n / float64(len(x.Labels))
	}

	hard := d
	hard.LabelOffset, hard.LabelNoise = -3.5, 4
	s, _ := NewSynthetic(3, hard)
	b := fill(t, s, 5, false)
	if !slices.Equal(a.IDs, b.IDs) || !slices.Equal(a.Offsets, b.Offsets) || !slices.Equal(a.Dense, b.Dense) {
		t.Fatal("label options changed the features")
	}
	if ra, rb := rate(a), rate(b); !(rb < ra-0.1) || !(rb > 0.1) {
		t.Errorf("positive rate %.3f with offset -3.5, noise 4; %.3f without: want clearly fewer, not none", rb, ra)
	}
	t.Logf("positive rate: %.3f plain, %.3f with offset -3.5 and noise 4", rate(a), rate(b))
	if again := fill(t, s, 5, false); !slices.Equal(again.Labels, b.Labels) {
		t.Error("noisy labels differ between two fills of one batch")
	}

	noisy := d
	noisy.LabelNoise = 2
	n, _ := NewSynthetic(3, noisy)
	if c := fill(t, n, 5, false); slices.Equal(c.Labels, a.Labels) {
		t.Error("noise 2 changed no label of 4096")
	}

	plain := newLabeler(1, 2, 0, 0)
	for _, score := range []float64{-1, -0.1, 0, 0.3, 2} {
		p := 1 / (1 + math.Exp(-3*score))
		if plain.label(score, math.Nextafter(p, 0)) != 1 || plain.label(score, p) != 0 {
			t.Errorf("score %v: the plain labeler does not draw Bernoulli(σ(3·score))", score)
		}
	}
}
