package kernel

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// SortByRow orders keys by row and keeps the positions of one row in their
// order, on the comparison path and the radix path, for one pass and more.
func TestSortByRow(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		n      int
		maxRow int64
	}{{0, 0}, {100, 9}, {5000, 1000}, {5000, 1<<22 - 1}, {20000, 1<<32 - 1}} {
		keys := make([]uint64, c.n)
		for i := range keys {
			keys[i] = uint64(r.Int64N(c.maxRow+1))<<32 | uint64(i)
		}
		want := slices.Clone(keys)
		slices.SortStableFunc(want, func(a, b uint64) int { return int(a>>32) - int(b>>32) })
		got := SortByRow(keys, make([]uint64, c.n), c.maxRow)
		if !slices.Equal(got, want) {
			t.Errorf("%d keys of rows ≤ %d: not sorted stably by row", c.n, c.maxRow)
		}
	}
}

func TestSortPasses(t *testing.T) {
	for rows, want := range map[int64]int{1: 1, 2: 1, 1 << 11: 1, 1<<11 + 1: 2, 1 << 22: 2, 10_000_000: 3, 1 << 32: 3} {
		if got := SortPasses(rows); got != want {
			t.Errorf("SortPasses(%d) = %d, want %d", rows, got, want)
		}
	}
}

// The radix sort orders by row and keeps position order among equal rows
// at the edges of its paths: 511 and 512 keys (comparison and radix), rows
// of one digit and of two, and rows past 2³¹.
func TestSortByRowEdges(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for _, n := range []int{0, 1, 511, 512, 5000} {
		for _, maxRow := range []int64{0, 1, 2047, 2048, 1 << 20, 1<<31 + 5} {
			keys := make([]uint64, n)
			for i := range keys {
				keys[i] = uint64(rng.Int64N(maxRow+1))<<32 | uint64(i)
			}
			got := SortByRow(keys, make([]uint64, n), maxRow)
			for i := 1; i < len(got); i++ {
				if got[i] <= got[i-1] {
					t.Fatalf("n %d maxRow %d: %x before %x", n, maxRow, got[i-1], got[i])
				}
			}
		}
	}
}
