package filter

import (
	"math"
	"slices"
)

// BucketTopK is RPAccel's top-k filtering unit (RecPipe Sec. 6.2, Fig.
// 10b) over one (sub-)batch of scores: each score goes to one of bins
// equal-width CTR bins over [0, 1] (a score of 1 or more to the top bin);
// scores below threshold (and NaN) are dropped, as the unit does not store
// their ids; then whole bins are taken from the top until at least k
// candidates are out. It writes their positions in scores into out,
// highest bin first and by position within a bin (the order the unit
// streams them; RecPipe calls the output unordered), and returns them with
// the number of scores that reached the threshold. When fewer than k did,
// every one of them is out.
//
// Whenever the k-th best score reaches the threshold, the output holds
// the exact top k (TopK): the bin of the k-th best is the first bin at
// which the count of candidates in it and above reaches k, and every
// candidate ranked above it lies in that bin or higher.
func BucketTopK(scores []float32, k, bins int, threshold float64, out []int64) (kept []int64, passed int) {
	bins = max(bins, 1)
	count := make([]int, bins)
	binOf := func(s float32) int {
		if s != s || float64(s) < threshold {
			return -1
		}
		return min(max(int(math.Floor(float64(s)*float64(bins))), 0), bins-1)
	}
	for _, s := range scores {
		if b := binOf(s); b >= 0 {
			count[b]++
			passed++
		}
	}
	// The lowest bin taken: the first, from the top, at which the count
	// reaches k (the bottom passing bin when it never does).
	lowest, sum := bins, 0
	for b := bins - 1; b >= 0 && sum < k; b-- {
		if count[b] > 0 {
			lowest = b
		}
		sum += count[b]
	}
	// Stream the kept bins from the top: a counting sort on the bin.
	offset, total := make([]int, bins), 0
	for b := bins - 1; b >= lowest; b-- {
		offset[b] = total
		total += count[b]
	}
	out = slices.Grow(out[:0], total)[:total]
	for i, s := range scores {
		if b := binOf(s); b >= lowest {
			out[offset[b]] = int64(i)
			offset[b]++
		}
	}
	return out, passed
}
