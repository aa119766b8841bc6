package data

import (
	"slices"
	"testing"

	"github.com/flowrun/flowrun/framework/config"
)

func dataset(locality string) config.Dataset {
	return config.Dataset{Kind: "synthetic", Batches: 4, BatchSize: 64, Tables: 3, Rows: 1000,
		Dim: 8, Lookups: 4, Locality: locality, ZipfS: 1.05, DenseFeatures: 5}
}

func fill(t *testing.T, s *Synthetic, seq uint64, eval bool) Arrays {
	t.Helper()
	d := s.d
	a := NewArrays(d)
	if err := s.Fill(seq, eval, a); err != nil {
		t.Fatal(err)
	}
	return a
}

// A batch depends only on (seed, sequence, eval): made twice, in any
// order, it is the same; another seed or sequence gives another batch.
func TestFillIsDeterministicBySeedAndSequence(t *testing.T) {
	for _, loc := range []string{"random", "uniform", "low", "medium", "high", "zipf"} {
		s1, err := NewSynthetic(7, dataset(loc))
		if err != nil {
			t.Fatal(err)
		}
		s2, _ := NewSynthetic(7, dataset(loc))
		other, _ := NewSynthetic(8, dataset(loc))
		b3 := fill(t, s1, 3, false)
		_ = fill(t, s2, 0, false)
		if again := fill(t, s2, 3, false); !slices.Equal(b3.IDs, again.IDs) || !slices.Equal(b3.Labels, again.Labels) {
			t.Errorf("%s: batch 3 differs when made after batch 0", loc)
		}
		if b := fill(t, other, 3, false); slices.Equal(b3.IDs, b.IDs) {
			t.Errorf("%s: another seed made the same IDs", loc)
		}
		if b := fill(t, s1, 3, true); slices.Equal(b3.IDs, b.IDs) {
			t.Errorf("%s: the held-out batch 3 equals the training batch 3", loc)
		}
	}
}

func TestFillShapesAndRanges(t *testing.T) {
	s, _ := NewSynthetic(1, dataset("zipf"))
	a := fill(t, s, 0, false)
	d := s.d
	for tb := 0; tb < d.Tables; tb++ {
		off := a.Offsets[tb*(d.BatchSize+1) : (tb+1)*(d.BatchSize+1)]
		for i := 0; i <= d.BatchSize; i++ {
			if off[i] != int64(i*d.Lookups) {
				t.Fatalf("table %d offset %d = %d", tb, i, off[i])
			}
		}
	}
	for _, id := range a.IDs {
		if id < 0 || id >= d.Rows {
			t.Fatalf("ID %d out of [0, %d)", id, d.Rows)
		}
	}
	var pos int
	for _, l := range a.Labels {
		if l != 0 && l != 1 {
			t.Fatalf("label %v", l)
		}
		pos += int(l)
	}
	if pos == 0 || pos == d.BatchSize {
		t.Errorf("labels all one class (%d of %d positive)", pos, d.BatchSize)
	}
}

// Higher locality means fewer distinct rows per batch: the order the
// papers' locality classes promise.
func TestLocalityOrdersSkew(t *testing.T) {
	distinct := func(loc string) int {
		d := dataset(loc)
		d.Rows, d.BatchSize = 100000, 512
		s, _ := NewSynthetic(1, d)
		a := fill(t, s, 0, false)
		seen := map[int64]bool{}
		for _, id := range a.IDs[:d.BatchSize*d.Lookups] {
			seen[id] = true
		}
		return len(seen)
	}
	r, l, m, h := distinct("random"), distinct("low"), distinct("medium"), distinct("high")
	if !(r > l && l > m && m > h) {
		t.Errorf("distinct rows per batch: random %d, low %d, medium %d, high %d; want strictly decreasing", r, l, m, h)
	}
}

func TestFillRejectsSmallArrays(t *testing.T) {
	s, _ := NewSynthetic(1, dataset("zipf"))
	if err := s.Fill(0, false, Arrays{}); err == nil {
		t.Fatal("Fill accepted empty arrays")
	}
}
