// Package stale is bounded staleness (HECA, Wu et al. 2024, Sec. 4.3) as a
// stage placed right before train: with staleness 1, batch b trains on
// each row that batch b-1 updated as it was before that update, and b's
// own update still lands on the live row: no update is lost, and the run
// is deterministic, whatever the timing. It is what HECA's prefetch does
// when the collector gathers batch b's rows while b-1 is still training;
// staleness 0 is exact synchronous training and the stage does nothing.
//
// How, without touching train: before b trains, every row b-1 touched is
// given back its live value, live + (what b-1's update made of the copy it
// read − that copy), and each row b shares with b-1 is swapped for its
// value before b-1's update, the live value kept aside. Train then reads
// the old value and adds its update to it; the next batch's turn adds that
// update to the live value. With SGD this is delayed-gradient SGD exactly;
// with Adagrad the optimizer state travels the same way (its increment,
// the squared gradient, is added to the live state), the step size is the
// one the stale state gave. Rows b-1 did not update are read live.
//
// The stage needs train(b-1) finished before it prepares b: a sequential
// graph (pipeline: sequential). Pipelined, the two would race; there
// train's own staleness option does the same (the README). The
// arithmetic both share is framework/stages/internal/staleness.
//
// The package imports no other stage kind, the graph or the engine.
package stale

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/stages/internal/staleness"
)

// MetricStaleness and MetricStaleShare are the metrics (results.json
// metrics.extra) a run with staleness > 0 reports: its staleness, which
// marks it inexact, and the share of distinct rows read stale.
const (
	MetricStaleness  = staleness.MetricStaleness
	MetricStaleShare = staleness.MetricStaleShare
)

type stager struct {
	set stage.Settings
	cfg *Config
	// win is batch b-1's distinct rows as the stage prepared them, and
	// the counts behind MetricStaleShare.
	win staleness.Window
}

func create(_ context.Context, set stage.Settings, c *Config) (any, error) {
	if c.Staleness > 0 && set.Graph.Pipeline != config.Sequential {
		return nil, fmt.Errorf("staleness %d needs pipeline: sequential: the stage prepares batch b once b-1 has trained, and pipelined the two would race (pipelined, set train's staleness instead, stages/stale/README.md)", c.Staleness)
	}
	if c.Source == SourceStorage && set.Storage == nil {
		return nil, errors.New("source: storage needs the run's Storage")
	}
	if c.Staleness > 0 {
		set.Metrics.Set(MetricStaleness, float64(c.Staleness))
	}
	if c.Staleness > 0 {
		return &checkpointed{&stager{set: set, cfg: c}}, nil
	}
	return &stager{set: set, cfg: c}, nil
}

// checkpointed is the stage with staleness 1: it also saves its window in
// a checkpoint (the previous batch's rows, live and as read, not yet
// restored at the boundary), so that a resumed run goes on as the
// uninterrupted one. Staleness 0 keeps no state.
type checkpointed struct{ *stager }

// Checkpoint implements stage.Checkpointer.
func (s *checkpointed) Checkpoint(context.Context) ([]byte, error) { return json.Marshal(&s.win) }

// Restore implements stage.Checkpointer.
func (s *checkpointed) Restore(_ context.Context, state []byte) error {
	if err := json.Unmarshal(state, &s.win); err != nil {
		return fmt.Errorf("stale: %w", err)
	}
	return nil
}

func (s *stager) Process(_ context.Context, b *batch.Batch) error {
	if s.cfg.Staleness == 0 {
		return nil
	}
	rows, err := s.distinct(b)
	if err != nil {
		return err
	}
	now := make(map[[2]int64]int64, len(rows))
	for _, r := range rows {
		now[[2]int64{int64(r.Table), r.ID}] = r.Slot
	}
	// The live value of every row b-1 trained.
	staleness.Restore(s.win.Prev(), func(r *staleness.Row) []float32 { return s.locate(r, now) })
	if b.Eval { // held-out batches are scored on the live rows
		s.win.Forget()
		return nil
	}
	stale := s.win.Swap(rows, func(r *staleness.Row) []float32 { return s.locate(r, nil) })
	StaleRows.Set(b, stale)
	s.set.Metrics.Set(MetricStaleShare, s.win.Share())
	return nil
}

// distinct lists b's distinct rows per table in first-occurrence order,
// each with its slot (-1 without Storage or for a bypass).
func (s *stager) distinct(b *batch.Batch) ([]staleness.Row, error) {
	return staleness.DistinctOf(s.set.Layout, b, s.cfg.Source == SourceStorage)
}

// locate returns where a row's authoritative value is now: the slot it
// was in if Storage still holds it there, else the slot the batch being
// prepared (now) placed it in, else its host table row (a bypassed row,
// or one evicted and written back since).
func (s *stager) locate(r *staleness.Row, now map[[2]int64]int64) []float32 {
	st := s.set.Storage
	if st != nil && r.Slot >= 0 && st.RowOf(r.Table, r.Slot) == r.ID {
		return st.Row(r.Table, r.Slot)
	}
	if at, ok := now[[2]int64{int64(r.Table), r.ID}]; ok && st != nil && at >= 0 && st.RowOf(r.Table, at) == r.ID {
		return st.Row(r.Table, at)
	}
	return s.set.Tables.Row(r.Table, r.ID)
}

// Finish gives the rows the last training batch read stale their live
// value, before Storage goes back to the host tables and the digest is
// taken (a run whose last batches are held-out ones did it already).
func (s *stager) Finish(context.Context) error {
	staleness.Restore(s.win.Prev(), func(r *staleness.Row) []float32 { return s.locate(r, nil) })
	s.win.Forget()
	return nil
}
