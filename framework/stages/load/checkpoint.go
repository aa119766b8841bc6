package load

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// dsfState is what Checkpoint saves: the DSF totals over the training
// batches loaded so far.
type dsfState struct {
	Unique  []int64 `json:"unique"`
	Lookups []int64 `json:"lookups"`
}

// Checkpoint implements stage.Checkpointer: DSF's totals, so that a
// resumed run's dsf_ratio covers every training batch. The data's
// position needs nothing: a batch is a function of the seed and its
// sequence.
func (l *loader) Checkpoint(context.Context) ([]byte, error) {
	l.dsf.mu.Lock()
	defer l.dsf.mu.Unlock()
	return json.Marshal(dsfState{Unique: slices.Clone(l.dsf.unique), Lookups: slices.Clone(l.dsf.lookups)})
}

// Restore implements stage.Checkpointer.
func (l *loader) Restore(_ context.Context, state []byte) error {
	var s dsfState
	if err := json.Unmarshal(state, &s); err != nil {
		return fmt.Errorf("load: restore DSF counts: %w", err)
	}
	if len(s.Unique) != len(s.Lookups) || (len(s.Unique) != 0 && len(s.Unique) != l.layout.Tables) {
		return fmt.Errorf("load: restore DSF counts: %d and %d tables, the run has %d", len(s.Unique), len(s.Lookups), l.layout.Tables)
	}
	l.dsf.mu.Lock()
	defer l.dsf.mu.Unlock()
	if len(s.Unique) > 0 {
		// count starts its totals when seen is nil: these are the totals.
		l.dsf.seen = make(map[int64]struct{})
		l.dsf.unique, l.dsf.lookups = s.Unique, s.Lookups
	}
	return nil
}
