package filter

import "slices"

// Selector chooses a query's survivors: the exact top k or RPAccel's
// bucketed unit, over the whole candidate list or over sub-batches of it
// whose shares of k are stitched (RPAccel O.5).
type Selector struct {
	K          int
	Mode       string // Exact or Bucket
	Bins       int
	Threshold  float64
	Fallback   string // FallbackNone or FallbackExact
	SubBatches int

	sub  []float32 // the candidates' scores
	pos  []int64   // one sub-batch's kept positions
	heap []int64
}

// Selection is what Select kept.
type Selection struct {
	// Kept are query indices: best first for an exact filter, in the
	// bucket unit's bin order for a bucketed one.
	Kept []int64
	// Short counts the sub-batches whose bucket filter saw fewer than
	// their share of k reach the threshold.
	Short int
	// Passed is the candidates that reached the threshold (bucket).
	Passed int
}

// Select picks the survivors among cands, query indices in ascending
// order (the query's order: sub-batches are contiguous runs of it, and
// ties go to the lower index), scored by scores (indexed by query index),
// into out. Sub-batch j of n holds ⌊m/n⌋ candidates, one more for the
// first m mod n, and keeps ⌊k/n⌋, one more for the first k mod n; with one
// sub-batch an exact filter is TopK itself. An exact filter's stitched
// output is ordered best first over the whole query, so that splitting
// changes which candidates survive, never how the survivors are ranked.
func (s *Selector) Select(scores []float32, cands []int64, out []int64) Selection {
	s.sub = slices.Grow(s.sub[:0], len(cands))[:len(cands)]
	for i, c := range cands {
		s.sub[i] = scores[c]
	}
	n := max(s.SubBatches, 1)
	m := len(cands)
	sel := Selection{Kept: out[:0]}
	lo := 0
	for j := range n {
		hi := lo + m/n
		if j < m%n {
			hi++
		}
		quota := s.K / n
		if j < s.K%n {
			quota++
		}
		var short bool
		var passed int
		s.pos, short, passed = s.part(s.sub[lo:hi], quota)
		if short {
			sel.Short++
		}
		sel.Passed += passed
		for _, p := range s.pos {
			sel.Kept = append(sel.Kept, cands[lo+int(p)])
		}
		lo = hi
	}
	if s.Mode == Exact && n > 1 {
		slices.SortFunc(sel.Kept, func(a, b int64) int {
			switch {
			case a == b:
				return 0
			case better(scores, a, b):
				return -1
			}
			return 1
		})
	}
	return sel
}

// part selects quota of one sub-batch's scores, as positions in it.
func (s *Selector) part(scores []float32, quota int) (pos []int64, short bool, passed int) {
	if s.Mode != Bucket {
		s.heap = slices.Grow(s.heap[:0], quota)[:quota]
		return TopK(scores, quota, s.heap), false, 0
	}
	pos, passed = BucketTopK(scores, quota, s.Bins, s.Threshold, s.pos)
	if passed >= min(quota, len(scores)) {
		return pos, false, passed
	}
	if s.Fallback == FallbackExact {
		s.heap = slices.Grow(s.heap[:0], quota)[:quota]
		pos = TopK(scores, quota, s.heap)
	}
	return pos, true, passed
}
