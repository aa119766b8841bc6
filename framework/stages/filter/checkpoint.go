package filter

import (
	"context"
	"encoding/json"
	"fmt"
)

// ndcgState is what Checkpoint saves: NDCG's running sum and counts.
type ndcgState struct {
	Sum        float64 `json:"sum"`
	Count      int     `json:"count"`
	NoPositive int     `json:"no_positive"`
}

// Checkpoint implements stage.Checkpointer: the NDCG sum and counts so
// far, so that a resumed run's ndcg averages every query.
func (f *filter) Checkpoint(context.Context) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return json.Marshal(ndcgState{Sum: f.ndcgSum, Count: f.ndcgCount, NoPositive: f.noPositive})
}

// Restore implements stage.Checkpointer.
func (f *filter) Restore(_ context.Context, state []byte) error {
	var s ndcgState
	if err := json.Unmarshal(state, &s); err != nil {
		return fmt.Errorf("filter: restore NDCG: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ndcgSum, f.ndcgCount, f.noPositive = s.Sum, s.Count, s.NoPositive
	return nil
}
