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
// graph (pipeline: sequential). Pipelined, the two would race; what a
// pipelined staleness needs from train is in the README.
//
// The package imports no other stage kind, the graph or the engine.
package stale

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/stage"
)

// MetricStaleness and MetricStaleShare are the metrics (results.json
// metrics.extra) a run with staleness > 0 reports: its staleness, which
// marks it inexact, and the share of distinct rows read stale.
const (
	MetricStaleness  = results.MetricStaleness
	MetricStaleShare = results.MetricStaleShare
)

type stager struct {
	set stage.Settings
	cfg *Config
	// prev is batch b-1's distinct rows as the stage prepared them.
	prev []kept
	// rows and stale count the training batches' distinct rows and
	// those read stale, for MetricStaleShare.
	rows, stale int64
}

// kept is one distinct row of a batch: where it was (slot, -1 for the
// host table), its live value when the batch was prepared, and, when the
// batch read it stale, the old value it read.
type kept struct {
	table int
	row   int64
	slot  int64
	live  []float32
	old   []float32 // nil: read live
}

func create(_ context.Context, set stage.Settings, c *Config) (any, error) {
	if c.Staleness > 0 && set.Graph.Pipeline != config.Sequential {
		return nil, fmt.Errorf("staleness %d needs pipeline: sequential: the stage prepares batch b once b-1 has trained, and pipelined the two would race (a pipelined staleness is train's to do, stages/stale/README.md)", c.Staleness)
	}
	if c.Source == SourceStorage && set.Storage == nil {
		return nil, errors.New("source: storage needs the run's Storage")
	}
	if c.Staleness > 0 {
		set.Metrics.Set(MetricStaleness, float64(c.Staleness))
	}
	return &stager{set: set, cfg: c}, nil
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
	for _, k := range rows {
		now[[2]int64{int64(k.table), k.row}] = k.slot
	}
	// The live value of every row b-1 trained, and its value before.
	before := make(map[[2]int64][]float32, len(s.prev))
	for _, k := range s.prev {
		row := s.locate(k.table, k.row, k.slot, now)
		if k.old != nil {
			for i := range row {
				row[i] = k.live[i] + (row[i] - k.old[i])
			}
		}
		before[[2]int64{int64(k.table), k.row}] = k.live
	}
	s.prev = s.prev[:0]
	if b.Eval { // held-out batches are scored on the live rows
		return nil
	}
	var stale int64
	for _, k := range rows {
		row := s.locate(k.table, k.row, k.slot, nil)
		k.live = slices.Clone(row)
		if old, ok := before[[2]int64{int64(k.table), k.row}]; ok {
			k.old = old
			copy(row, old)
			stale++
		}
		s.prev = append(s.prev, k)
	}
	StaleRows.Set(b, stale)
	s.rows += int64(len(rows))
	s.stale += stale
	s.set.Metrics.Set(MetricStaleShare, float64(s.stale)/float64(max(s.rows, 1)))
	return nil
}

// distinct lists b's distinct rows per table in first-occurrence order,
// each with its slot (-1 without Storage or for a bypass).
func (s *stager) distinct(b *batch.Batch) ([]kept, error) {
	ids, err := batch.IDs.View(b)
	if err != nil {
		return nil, err
	}
	offsets, err := batch.Offsets.View(b)
	if err != nil {
		return nil, err
	}
	var slots []int64
	if s.cfg.Source == SourceStorage {
		if slots, err = batch.Slots.View(b); err != nil {
			return nil, err
		}
	}
	l := s.set.Layout
	B := int64(l.BatchSize)
	var out []kept
	for t, start := range l.IndexStart()[:l.Tables] {
		off := offsets[int64(t)*(B+1) : int64(t+1)*(B+1)]
		seen := map[int64]bool{}
		for p := start + off[0]; p < start+off[B]; p++ {
			if seen[ids[p]] {
				continue
			}
			seen[ids[p]] = true
			k := kept{table: t, row: ids[p], slot: -1}
			if slots != nil {
				k.slot = slots[p]
			}
			out = append(out, k)
		}
	}
	return out, nil
}

// locate returns where a row's authoritative value is now: the slot it
// was in if Storage still holds it there, else the slot the batch being
// prepared (now) placed it in, else its host table row (a bypassed row,
// or one evicted and written back since).
func (s *stager) locate(table int, row, slot int64, now map[[2]int64]int64) []float32 {
	st := s.set.Storage
	if st != nil && slot >= 0 && st.RowOf(table, slot) == row {
		return st.Row(table, slot)
	}
	if at, ok := now[[2]int64{int64(table), row}]; ok && st != nil && at >= 0 && st.RowOf(table, at) == row {
		return st.Row(table, at)
	}
	return s.set.Tables.Row(table, row)
}

// Finish gives the rows the last training batch read stale their live
// value, before Storage goes back to the host tables and the digest is
// taken (a run whose last batches are held-out ones did it already).
func (s *stager) Finish(context.Context) error {
	for _, k := range s.prev {
		if k.old == nil {
			continue
		}
		row := s.locate(k.table, k.row, k.slot, nil)
		for i := range row {
			row[i] = k.live[i] + (row[i] - k.old[i])
		}
	}
	s.prev = nil
	return nil
}
