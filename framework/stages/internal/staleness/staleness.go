// Package staleness is HECA's bounded staleness of one update (Wu, Zhao
// and Chen 2024, Sec. 4.3), shared by the two stage kinds that offer it:
// the stale stage (a stage before train, sequential graphs) and train's
// own staleness option (any graph, pipelined included). Stage kinds never
// import each other, so the arithmetic both must do bit for bit the same
// lives here, below them.
//
// Batch b trains on each row batch b−1 updated as it was before that
// update (Swap), and b's update is then added to the live row (Restore):
// live + (after − old), where old is the copy b read and after what b's
// update made of it. With SGD this is delayed-gradient SGD exactly; with
// Adagrad the optimizer state, part of the row, travels the same way.
//
// The package owns no rows: a caller says where each row's value is now
// (a Locate). It imports framework/batch and framework/results only; never
// a stage kind, the graph or the engine.
package staleness

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/results"
)

// StaleRows is, per training batch, the distinct rows it reads one update
// old: a stat of the span of the stage that swaps them.
var StaleRows = batch.NewStat("stale_rows")

// MetricStaleness and MetricStaleShare are the metrics (results.json
// metrics.extra) of a run with staleness 1: its staleness, which marks it
// inexact, and the share of the training batches' distinct rows read
// stale.
const (
	MetricStaleness  = results.MetricStaleness
	MetricStaleShare = results.MetricStaleShare
)

// Row is one distinct row of a batch: where it was (Slot in Storage, -1
// for its host table), its live value when the batch was prepared, and,
// when the batch read it stale, the old value it read.
type Row struct {
	Table int       `json:"table"`
	ID    int64     `json:"id"`
	Slot  int64     `json:"slot"`
	Live  []float32 `json:"live"`
	Old   []float32 `json:"old,omitempty"` // nil: read live
}

// Locate returns the float32s where r's value is now.
type Locate func(r *Row) []float32

// DistinctOf is Distinct over batch b's ids and offsets, with the plan's
// slots when withSlots (a trainer reading Storage), else without.
func DistinctOf(l *batch.Layout, b *batch.Batch, withSlots bool) ([]Row, error) {
	ids, err := batch.IDs.View(b)
	if err != nil {
		return nil, err
	}
	offsets, err := batch.Offsets.View(b)
	if err != nil {
		return nil, err
	}
	var slots []int64
	if withSlots {
		if slots, err = batch.Slots.View(b); err != nil {
			return nil, err
		}
	}
	return Distinct(l, ids, offsets, slots), nil
}

// Distinct lists a batch's distinct rows per table in first-occurrence
// order, each with its slot (-1 when slots is nil, or for a bypass).
func Distinct(l *batch.Layout, ids, offsets, slots []int64) []Row {
	B := int64(l.BatchSize)
	var out []Row
	for t, start := range l.IndexStart()[:l.Tables] {
		off := offsets[int64(t)*(B+1) : int64(t+1)*(B+1)]
		seen := map[int64]bool{}
		for p := start + off[0]; p < start+off[B]; p++ {
			if seen[ids[p]] {
				continue
			}
			seen[ids[p]] = true
			r := Row{Table: t, ID: ids[p], Slot: -1}
			if slots != nil {
				r.Slot = slots[p]
			}
			out = append(out, r)
		}
	}
	return out
}

// Window is the one batch of history staleness 1 needs: the previous
// training batch's rows with their live values before its update, and the
// counts behind MetricStaleShare.
type Window struct {
	prev        []Row
	rows, stale int64
}

// Swap prepares a training batch's rows (from Distinct): each keeps its
// live value, and each the previous batch also trained is overwritten
// with its value before that batch's update. rows become the window's
// previous batch. It returns how many rows were read stale.
func (w *Window) Swap(rows []Row, at Locate) int64 {
	before := make(map[[2]int64][]float32, len(w.prev))
	for _, r := range w.prev {
		before[[2]int64{int64(r.Table), r.ID}] = r.Live
	}
	var stale int64
	for i := range rows {
		r := &rows[i]
		v := at(r)
		r.Live = slices.Clone(v)
		if old, ok := before[[2]int64{int64(r.Table), r.ID}]; ok {
			r.Old = old
			copy(v, old)
			stale++
		}
	}
	w.prev = rows
	w.rows += int64(len(rows))
	w.stale += stale
	return stale
}

// Prev is the previous training batch's rows (nil after Forget).
func (w *Window) Prev() []Row { return w.prev }

// Forget drops the previous batch: the next one reads every row live (a
// held-out batch updates nothing).
func (w *Window) Forget() { w.prev = nil }

// Share is the share of the training batches' distinct rows read stale.
func (w *Window) Share() float64 { return float64(w.stale) / float64(max(w.rows, 1)) }

// Restore gives each row read stale its live value plus the update since
// it was swapped: live + (now − old). A row read live is left as it is
// (no rounding).
func Restore(rows []Row, at Locate) {
	for i := range rows {
		r := &rows[i]
		if r.Old == nil {
			continue
		}
		v := at(r)
		for j := range v {
			v[j] = r.Live[j] + (v[j] - r.Old[j])
		}
	}
}

// state is a Window as a checkpoint saves it (encoding/json writes a
// float32 so that it reads back the same bits).
type state struct {
	Prev  []Row `json:"prev"`
	Rows  int64 `json:"rows"`
	Stale int64 `json:"stale"`
}

// MarshalJSON saves the window: a run resumed from a checkpoint then
// reads the same rows stale as the uninterrupted run (the stages'
// stage.Checkpointer).
func (w *Window) MarshalJSON() ([]byte, error) {
	return json.Marshal(state{Prev: w.prev, Rows: w.rows, Stale: w.stale})
}

// UnmarshalJSON restores a window MarshalJSON saved.
func (w *Window) UnmarshalJSON(b []byte) error {
	var s state
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("staleness window: %w", err)
	}
	w.prev, w.rows, w.stale = s.Prev, s.Rows, s.Stale
	return nil
}
