// Package planreq validates a cache.PlanRequest against the run's tables and
// maps its regions, once, for every built-in cache policy. A policy gets
// either a fully checked Batch or an error wrapping plugin.ErrInvalidRequest,
// before it has changed any of its own state: a bad request must not leave a
// policy half-updated.
package planreq

import (
	"fmt"

	"github.com/flowrun/flowrun/plugins/internal/shm"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// Batch is one PlanRequest's arrays, mapped and checked.
type Batch struct {
	// IDs, Slots and Hits are indexed by the position of an ID in the
	// request; table t owns positions [Offsets[t], Offsets[t+1]).
	IDs   []int64
	Slots []int64
	Hits  []byte
	// Victims has room for 3 int64s (table, row, slot) per ID.
	Victims []int64
	Offsets []int64
}

// Table returns the range of positions table t owns.
func (b *Batch) Table(t int) (lo, hi int64) { return b.Offsets[t], b.Offsets[t+1] }

// View checks req against tables and maps its regions through m. Every ID
// must name a row of its table.
func View(m *region.Mapper, tables []plugin.Table, req *cache.PlanRequest) (*Batch, error) {
	if req == nil {
		return nil, fmt.Errorf("%w: nil plan request", plugin.ErrInvalidRequest)
	}
	off := req.TableOffsets
	if len(off) != len(tables)+1 {
		return nil, fmt.Errorf("%w: batch %d: %d table offsets for %d tables, want %d",
			plugin.ErrInvalidRequest, req.Seq, len(off), len(tables), len(tables)+1)
	}
	if off[0] < 0 {
		return nil, fmt.Errorf("%w: batch %d: table offset 0 is negative (%d)", plugin.ErrInvalidRequest, req.Seq, off[0])
	}
	for t := range tables {
		if off[t+1] < off[t] {
			return nil, fmt.Errorf("%w: batch %d: table %d offsets decrease (%d > %d)",
				plugin.ErrInvalidRequest, req.Seq, t, off[t], off[t+1])
		}
	}
	n := off[len(tables)]
	b := &Batch{Offsets: off}
	var err error
	if b.IDs, err = shm.Int64s(m, req.IDs, n, "ids"); err != nil {
		return nil, fmt.Errorf("batch %d: %w", req.Seq, err)
	}
	if b.Slots, err = shm.Int64s(m, req.Slots, n, "slots"); err != nil {
		return nil, fmt.Errorf("batch %d: %w", req.Seq, err)
	}
	if b.Hits, err = shm.Bytes(m, req.Hits, n, "hits"); err != nil {
		return nil, fmt.Errorf("batch %d: %w", req.Seq, err)
	}
	if b.Victims, err = shm.Int64s(m, req.Victims, 3*n, "victims"); err != nil {
		return nil, fmt.Errorf("batch %d: %w", req.Seq, err)
	}
	for t, tab := range tables {
		lo, hi := b.Table(t)
		for i := lo; i < hi; i++ {
			if id := b.IDs[i]; id < 0 || id >= tab.Rows {
				return nil, fmt.Errorf("%w: batch %d: table %d: id %d at position %d outside [0, %d)",
					plugin.ErrInvalidRequest, req.Seq, t, id, i, tab.Rows)
			}
		}
	}
	return b, nil
}

// CheckTables rejects a Setup whose tables cannot hold rows.
func CheckTables(tables []plugin.Table) error {
	for t, tab := range tables {
		if tab.Rows < 0 {
			return fmt.Errorf("%w: table %d: rows must be ≥ 0, got %d", plugin.ErrInvalidConfig, t, tab.Rows)
		}
	}
	return nil
}

// Future maps and checks the request's future windows: each is laid out
// like the request's IDs (same TableOffsets), its IDs must name rows of
// their tables, and the windows must follow the batch in sequence order.
// It returns the windows' IDs, oldest first; call it after View.
func Future(m *region.Mapper, tables []plugin.Table, req *cache.PlanRequest) ([][]int64, error) {
	if len(req.Future) == 0 {
		return nil, nil
	}
	n := req.TableOffsets[len(tables)]
	out := make([][]int64, len(req.Future))
	prev := req.Seq
	for j, w := range req.Future {
		if w.Seq <= prev {
			return nil, fmt.Errorf("%w: batch %d: future window %d is batch %d, not after batch %d",
				plugin.ErrInvalidRequest, req.Seq, j, w.Seq, prev)
		}
		prev = w.Seq
		ids, err := shm.Int64s(m, w.IDs, n, "ids")
		if err != nil {
			return nil, fmt.Errorf("batch %d: future window %d (batch %d): %w", req.Seq, j, w.Seq, err)
		}
		for t, tab := range tables {
			for i := req.TableOffsets[t]; i < req.TableOffsets[t+1]; i++ {
				if id := ids[i]; id < 0 || id >= tab.Rows {
					return nil, fmt.Errorf("%w: batch %d: future batch %d: table %d: id %d at position %d outside [0, %d)",
						plugin.ErrInvalidRequest, req.Seq, w.Seq, t, id, i, tab.Rows)
				}
			}
		}
		out[j] = ids
	}
	return out, nil
}
