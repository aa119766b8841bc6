package batch

import (
	"fmt"
	"slices"
)

// Multi-stage inference (RecPipe): a filter keeps some of a query's
// candidates, and the next stage ranks only those. The survivors'
// indices travel in TopK (fields.go); Kept says how many of its entries
// hold them. Kept is declared here because two stage kinds read it
// (filter writes it, score and a later filter read it) and stage kinds
// never import each other.
var (
	// Kept is how many entries of TopK a filter filled: k for an exact
	// filter, at least k for RPAccel's bucketed one, fewer when fewer
	// candidates passed its threshold.
	Kept = NewStat("kept")
)

// Survivors is the first Kept entries of b's TopK: the candidates an
// upstream filter passed on, or an error naming the stage (by) that needs
// them when none did.
func Survivors(b *Batch, by string) ([]int64, error) {
	n, err := Kept.Need(b, by)
	if err != nil {
		return nil, err
	}
	topk, err := TopK.View(b)
	if err != nil {
		return nil, err
	}
	if n < 0 || n > int64(len(topk)) {
		return nil, fmt.Errorf("batch %d: kept %d is outside the topk array's %d entries", b.Seq, n, len(topk))
	}
	return topk[:n], nil
}

// Candidates is the query indices a ranking stage (by) works on, in
// ascending order, into dst: every one of the batch's n candidates, or,
// with survivors, the upstream filter's survivors, each checked to be a
// distinct candidate of the n.
func Candidates(b *Batch, by string, n int, survivors bool, dst []int64) ([]int64, error) {
	if !survivors {
		if len(dst) != n {
			dst = make([]int64, n)
			for i := range dst {
				dst[i] = int64(i)
			}
		}
		return dst, nil
	}
	surv, err := Survivors(b, by)
	if err != nil {
		return dst, err
	}
	dst = append(dst[:0], surv...)
	slices.Sort(dst)
	for i, c := range dst {
		if c < 0 || c >= int64(n) || (i > 0 && dst[i-1] == c) {
			return dst, fmt.Errorf("batch %d: upstream topk entry %d is not a distinct candidate of the %d", b.Seq, c, n)
		}
	}
	return dst, nil
}
