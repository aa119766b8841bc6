package search

import (
	"math"
	"slices"
	"testing"
)

// The frontier of a hand-made set: dominated points out (worse in one
// figure and no better in the other), ineligible points out, exact ties
// kept once (the first listed), equal quality at a higher p99 out, equal
// p99 at a lower quality out; sorted by p99.
func TestParetoFrontier(t *testing.T) {
	pts := []Point{
		0: {Quality: 0.90, P99Ms: 10, Eligible: true},      // best quality, slowest: on
		1: {Quality: 0.80, P99Ms: 4, Eligible: true},       // on
		2: {Quality: 0.70, P99Ms: 5, Eligible: true},       // dominated by 1 (worse in both)
		3: {Quality: 0.80, P99Ms: 6, Eligible: true},       // same quality as 1, slower: off
		4: {Quality: 0.60, P99Ms: 2, Eligible: true},       // fastest: on
		5: {Quality: 0.95, P99Ms: 1, Eligible: false},      // overloaded: never on, dominates nothing
		6: {Quality: 0.60, P99Ms: 2, Eligible: true},       // exact tie with 4: 4 stands
		7: {Quality: 0.50, P99Ms: 4, Eligible: true},       // same p99 as 1, worse: off
		8: {Quality: 0.85, P99Ms: 8, Eligible: true},       // between 1 and 0: on
		9: {Quality: math.NaN(), P99Ms: 1, Eligible: true}, // no quality: never on
	}
	got := ParetoFrontier(pts)
	if want := []int{4, 1, 8, 0}; !slices.Equal(got, want) {
		t.Fatalf("frontier %v, want %v", got, want)
	}
	// Along the frontier quality rises strictly with p99.
	for i := 1; i < len(got); i++ {
		a, b := pts[got[i-1]], pts[got[i]]
		if !(a.P99Ms < b.P99Ms && a.Quality < b.Quality) {
			t.Errorf("frontier not a strict staircase at %d: %+v then %+v", i, a, b)
		}
	}
	// Order does not matter except for which of two tied points stands.
	rev := slices.Clone(pts)
	slices.Reverse(rev)
	var back []int
	for _, i := range ParetoFrontier(rev) {
		back = append(back, len(pts)-1-i)
	}
	if want := []int{6, 1, 8, 0}; !slices.Equal(back, want) {
		t.Errorf("reversed: frontier %v, want %v (the tie goes to the first listed)", back, want)
	}
	if f := ParetoFrontier([]Point{{Quality: 1, P99Ms: 1}}); len(f) != 0 {
		t.Errorf("only an ineligible point: frontier %v", f)
	}
}

// The best design within a target is the highest quality meeting it, on
// the frontier, never an ineligible one; none when nothing meets it.
func TestBestWithin(t *testing.T) {
	pts := []Point{
		{Quality: 0.90, P99Ms: 10, Eligible: true},
		{Quality: 0.80, P99Ms: 4, Eligible: true},
		{Quality: 0.99, P99Ms: 3, Eligible: false},
		{Quality: 0.80, P99Ms: 3, Eligible: true},
		{Quality: 0.60, P99Ms: 2, Eligible: true},
	}
	front := ParetoFrontier(pts)
	for _, c := range []struct {
		target float64
		want   int
	}{{1, -1}, {2, 4}, {3, 3}, {4, 3}, {9.99, 3}, {10, 0}, {100, 0}} {
		got := BestWithin(pts, c.target)
		if got != c.want {
			t.Errorf("target %g ms: best %d, want %d", c.target, got, c.want)
		}
		if got >= 0 && !slices.Contains(front, got) {
			t.Errorf("target %g ms: best %d is not on the frontier %v", c.target, got, front)
		}
	}
}

// The fastest design reaching a quality is the lowest p99 among those at
// or above it, on the frontier, never an ineligible one.
func TestFastestWithQuality(t *testing.T) {
	pts := []Point{
		{Quality: 0.90, P99Ms: 10, Eligible: true},
		{Quality: 0.80, P99Ms: 4, Eligible: true},
		{Quality: 0.99, P99Ms: 1, Eligible: false},
		{Quality: 0.85, P99Ms: 4, Eligible: true},
		{Quality: 0.60, P99Ms: 2, Eligible: true},
	}
	front := ParetoFrontier(pts)
	for _, c := range []struct {
		q    float64
		want int
	}{{0, 4}, {0.6, 4}, {0.61, 3}, {0.85, 3}, {0.86, 0}, {0.9, 0}, {0.95, -1}} {
		got := FastestWithQuality(pts, c.q)
		if got != c.want {
			t.Errorf("NDCG ≥ %g: fastest %d, want %d", c.q, got, c.want)
		}
		if got >= 0 && !slices.Contains(front, got) {
			t.Errorf("NDCG ≥ %g: fastest %d is not on the frontier %v", c.q, got, front)
		}
	}
}
