package search

import (
	"cmp"
	"math"
	"slices"
)

// Point is one design at one QPS as the frontier sees it: its quality
// (higher is better) and its p99 latency (lower is better). A point that
// is not Eligible (overloaded at this QPS, failed, or without a quality)
// is never on the frontier and never the best design for a target.
type Point struct {
	Quality  float64
	P99Ms    float64
	Eligible bool
}

// ok is whether p can be compared at all: eligible, with finite figures.
func (p Point) ok() bool {
	return p.Eligible && !math.IsNaN(p.Quality) && !math.IsInf(p.Quality, 0) && !math.IsNaN(p.P99Ms) && !math.IsInf(p.P99Ms, 0)
}

// beats says whether point a (at index i) knocks point b (at index j)
// off the frontier. The rule:
//
//   - a dominates b when a's quality is at least b's and a's p99 at most
//     b's, one of them strictly (the usual Pareto dominance);
//   - two points with exactly the same quality and p99 are one point on
//     the frontier: the design listed first (lower index) stands for
//     both, the other is off it.
//
// So every (quality, p99) pair on the frontier appears once, and the
// frontier is a strict staircase: sorted by p99 ascending, quality rises
// strictly.
func beats(a Point, i int, b Point, j int) bool {
	if a.Quality == b.Quality && a.P99Ms == b.P99Ms {
		return i < j
	}
	return a.Quality >= b.Quality && a.P99Ms <= b.P99Ms
}

// ParetoFrontier returns the indices of the points on the quality–p99 Pareto
// frontier (see beats for the rule), in ascending p99 (so ascending
// quality). Ineligible points are left out.
func ParetoFrontier(pts []Point) []int {
	var out []int
	for j, b := range pts {
		if !b.ok() {
			continue
		}
		dominated := false
		for i, a := range pts {
			if i != j && a.ok() && beats(a, i, b, j) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b int) int {
		return cmp.Or(cmp.Compare(pts[a].P99Ms, pts[b].P99Ms), cmp.Compare(a, b))
	})
	return out
}

// BestWithin is the index of the best design whose p99 is at most
// targetMs: the highest quality, then the lower p99, then the design
// listed first; -1 when no eligible point meets the target. The answer
// is always a frontier point (a point that beats it would meet the
// target too and win).
func BestWithin(pts []Point, targetMs float64) int {
	best := -1
	for i, p := range pts {
		if !p.ok() || p.P99Ms > targetMs {
			continue
		}
		if best < 0 || p.Quality > pts[best].Quality || (p.Quality == pts[best].Quality && p.P99Ms < pts[best].P99Ms) {
			best = i
		}
	}
	return best
}

// FastestWithQuality is the index of the fastest design whose quality is
// at least minQuality (RecPipe's iso-quality comparisons): the lowest
// p99, then the higher quality, then the design listed first; -1 when no
// eligible point reaches it. Like BestWithin, always a frontier point.
func FastestWithQuality(pts []Point, minQuality float64) int {
	best := -1
	for i, p := range pts {
		if !p.ok() || p.Quality < minQuality {
			continue
		}
		if best < 0 || p.P99Ms < pts[best].P99Ms || (p.P99Ms == pts[best].P99Ms && p.Quality > pts[best].Quality) {
			best = i
		}
	}
	return best
}
