package batch

import "fmt"

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
