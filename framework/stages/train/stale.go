package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stages/internal/staleness"
)

// Bounded staleness (staleness: 1) done by train itself. Train is the one
// stage that runs its batches strictly in order, and between the start of
// train(b) and its end no other stage may move or write b's rows (the
// cache's windows hold them, the hazard checker checks it): so swapping
// b's rows for their values before b-1's update at the start of the pass,
// and adding b's update to the live rows at its end, reads and writes
// nothing another batch in flight uses, whatever the timing. The stale
// stage does the same two steps around train in a sequential graph; both
// use framework/stages/internal/staleness, so the two end with the same
// digest.

// checkStaleness refuses what staleness 1 cannot train: host tables
// stored below FP32, whose rows are no float32s to swap in place.
func (t *trainer) checkStaleness() error {
	if t.cfg.Staleness == 0 {
		return nil
	}
	if t.lowPrecision() {
		return errors.New("staleness: 1 needs FP32 host tables (embedding.precision): a stale copy is swapped into the row in place")
	}
	t.set.Metrics.Set(staleness.MetricStaleness, float64(t.cfg.Staleness))
	return nil
}

// swapStale, before b's gather, swaps each row b shares with b-1 for its
// value before b-1's update (kept from b-1's pass) and returns b's rows,
// for unswapStale after the update. A held-out batch reads every row live,
// and the batch after it too.
func (t *trainer) swapStale(b *batch.Batch) ([]staleness.Row, error) {
	if t.cfg.Staleness == 0 {
		return nil, nil
	}
	if b.Eval {
		t.stale.Forget()
		return nil, nil
	}
	rows, err := staleness.DistinctOf(t.set.Layout, b, t.cfg.Source == SourceStorage)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		if r := &rows[i]; r.Slot >= 0 && t.set.Storage.RowOf(r.Table, r.Slot) != r.ID {
			return nil, fmt.Errorf("batch %d: table %d: row %d should be in slot %d, which holds row %d: the plan's Hit-Map and Storage disagree",
				b.Seq, r.Table, r.ID, r.Slot, t.set.Storage.RowOf(r.Table, r.Slot))
		}
	}
	staleness.StaleRows.Set(b, t.stale.Swap(rows, t.staleRow))
	t.set.Metrics.Set(staleness.MetricStaleShare, t.stale.Share())
	return rows, nil
}

// unswapStale, after b's update, gives each row b read stale its live
// value plus b's update.
func (t *trainer) unswapStale(rows []staleness.Row) {
	staleness.Restore(rows, t.staleRow)
}

// staleRow is where a row of the batch in train is: its slot (checked by
// swapStale), or its host table row (source: host, or a bypass).
func (t *trainer) staleRow(r *staleness.Row) []float32 {
	if r.Slot >= 0 {
		return t.set.Storage.Row(r.Table, r.Slot)
	}
	return t.set.Tables.Row(r.Table, r.ID)
}

// staleTrainer is train with staleness: 1: a trainer that also saves its
// window in a checkpoint, so that a resumed run reads the same rows stale
// (at a batch boundary every row is live; what is lost without it is the
// previous batch's values before its update). Staleness 0 is the plain
// trainer, whose checkpoints hold no state of train.
type staleTrainer struct{ *trainer }

// Checkpoint implements stage.Checkpointer.
func (t staleTrainer) Checkpoint(context.Context) ([]byte, error) { return json.Marshal(&t.stale) }

// Restore implements stage.Checkpointer.
func (t staleTrainer) Restore(_ context.Context, state []byte) error {
	if err := json.Unmarshal(state, &t.stale); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return nil
}
