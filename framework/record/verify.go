package record

import (
	"errors"
	"fmt"
	"sync"
)

// ErrDiverged is wrapped by a Verifier's error: a replayed batch is not
// the recorded one.
var ErrDiverged = errors.New("replay diverged from the record")

// Verifier checks a replay's batches against a record: each batch the
// stream holds must have the same lookups and, planned by the same
// policy, the same hits, slots and victims. Safe for concurrent use.
type Verifier struct {
	rec *Record
	// LookupsOnly compares the lookups, not the plan: a replay whose
	// policy restarts cold at its checkpoint plans otherwise.
	LookupsOnly bool
	mu          sync.Mutex
	// Compared counts the batches checked equal; Outside those the
	// stream does not hold (before its window).
	Compared, Outside int
}

// NewVerifier checks against rec.
func NewVerifier(rec *Record) *Verifier { return &Verifier{rec: rec} }

// Batch checks b against the record's batch of the same sequence.
func (v *Verifier) Batch(b Batch) error {
	if !v.rec.Has(b.Seq) {
		v.mu.Lock()
		v.Outside++
		v.mu.Unlock()
		return nil
	}
	want, err := v.rec.Batch(b.Seq)
	if err != nil {
		return err
	}
	if v.LookupsOnly {
		want.Planned, b.Planned = false, false
	}
	if d := Diff(want, b); d != "" {
		return fmt.Errorf("%w at batch %d: %s", ErrDiverged, b.Seq, d)
	}
	v.mu.Lock()
	v.Compared++
	v.mu.Unlock()
	return nil
}

// Diff names the first difference between a recorded batch and another
// ("" when they are equal).
func Diff(rec, got Batch) string {
	switch {
	case rec.Eval != got.Eval:
		return fmt.Sprintf("held-out %v, recorded %v", got.Eval, rec.Eval)
	case rec.IDs != nil && len(rec.IDs) != len(got.IDs):
		return fmt.Sprintf("%d lookups, recorded %d", len(got.IDs), len(rec.IDs))
	}
	if i := firstDiff(rec.IDs, got.IDs); rec.IDs != nil && i >= 0 {
		return fmt.Sprintf("lookup %d is row %d, recorded %d (the data source gives another stream than the recorded run's)", i, got.IDs[i], rec.IDs[i])
	}
	if rec.Planned != got.Planned {
		return fmt.Sprintf("planned %v, recorded %v", got.Planned, rec.Planned)
	}
	if !rec.Planned {
		return ""
	}
	if len(rec.Hits) != len(got.Hits) || len(rec.Slots) != len(got.Slots) {
		return fmt.Sprintf("%d hit flags and %d slots, recorded %d and %d", len(got.Hits), len(got.Slots), len(rec.Hits), len(rec.Slots))
	}
	if i := firstDiff(rec.Hits, got.Hits); i >= 0 {
		return fmt.Sprintf("lookup %d (row %d) hit=%d, recorded %d", i, got.IDs[i], got.Hits[i], rec.Hits[i])
	}
	if i := firstDiff(rec.Slots, got.Slots); i >= 0 {
		return fmt.Sprintf("lookup %d (row %d) in slot %d, recorded %d", i, got.IDs[i], got.Slots[i], rec.Slots[i])
	}
	if len(rec.Victims) != len(got.Victims) {
		return fmt.Sprintf("%d victims, recorded %d", len(got.Victims)/3, len(rec.Victims)/3)
	}
	if i := firstDiff(rec.Victims, got.Victims); i >= 0 {
		return fmt.Sprintf("victim %d is %v, recorded %v", i/3, got.Victims[i/3*3:i/3*3+3], rec.Victims[i/3*3:i/3*3+3])
	}
	return ""
}

func firstDiff[T comparable](a, b []T) int {
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}
