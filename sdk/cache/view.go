package cache

import (
	"fmt"
	"math"

	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
	"github.com/flowrun/flowrun/sdk/region/checked"
)

// Batch is a PlanRequest's arrays, mapped from shared memory and checked by
// PlanRequest.View. Slots, Hits and Victims are the host's memory: a policy
// writes its answers into them directly.
type Batch struct {
	// IDs, Slots and Hits are indexed by the position of an ID in the
	// request; table t owns positions [Offsets[t], Offsets[t+1]).
	IDs   []int64
	Slots []int64
	Hits  []byte
	// Victims has room for one (table, row, slot) triple per ID.
	Victims []int64
	// Offsets is the request's TableOffsets.
	Offsets []int64
}

// Table returns the range of positions table t owns.
func (b *Batch) Table(t int) (lo, hi int64) { return b.Offsets[t], b.Offsets[t+1] }

// View checks req against the run's tables (Setup.Tables) and maps its
// arrays through m:
//
//   - TableOffsets has one entry per table plus one, starts at 0 and never
//     decreases; Victims' three int64s per ID do not overflow;
//   - IDs, Slots and Victims are 8-byte aligned (even for an empty batch);
//     IDs, Slots, Hits and Victims are present and hold one entry (Victims:
//     one triple) per ID, in regions that exist;
//   - every ID is a row of its table.
//
// Every error wraps plugin.ErrInvalidRequest and names the batch. View
// writes nothing, so a policy that calls it before changing its own state
// leaves that state as it was when a request is refused. It does not look
// at Future (see FutureIDs): a policy that ignores the windows need not pay
// for checking them.
func (req *PlanRequest) View(m *region.Mapper, tables []plugin.Table) (*Batch, error) {
	if req == nil {
		return nil, fmt.Errorf("%w: nil plan request", plugin.ErrInvalidRequest)
	}
	b, err := req.view(m, tables)
	if err != nil {
		return nil, fmt.Errorf("batch %d: %w", req.Seq, err)
	}
	return b, nil
}

func (req *PlanRequest) view(m *region.Mapper, tables []plugin.Table) (*Batch, error) {
	n, err := req.count(len(tables))
	if err != nil {
		return nil, err
	}
	for _, a := range []struct {
		what string
		ref  region.Ref
	}{{"ids", req.IDs}, {"slots", req.Slots}, {"victims", req.Victims}} {
		if a.ref.Offset%8 != 0 {
			return nil, fmt.Errorf("%w: %s: offset %d not aligned to 8 bytes", plugin.ErrInvalidRequest, a.what, a.ref.Offset)
		}
	}
	b := &Batch{Offsets: req.TableOffsets}
	if b.IDs, err = checked.Int64s(m, req.IDs, n, "ids"); err != nil {
		return nil, err
	}
	if b.Slots, err = checked.Int64s(m, req.Slots, n, "slots"); err != nil {
		return nil, err
	}
	if b.Hits, err = checked.Bytes(m, req.Hits, n, "hits"); err != nil {
		return nil, err
	}
	if b.Victims, err = checked.Int64s(m, req.Victims, 3*n, "victims"); err != nil {
		return nil, err
	}
	if err := checkRows(b.IDs, req.TableOffsets, tables); err != nil {
		return nil, err
	}
	return b, nil
}

// FutureIDs checks req's future windows and maps their IDs through m: each
// window is laid out like the request's IDs (same TableOffsets, which must
// pass View's checks), its IDs must be rows of their tables, and the
// windows must follow the batch in sequence order. It returns the windows'
// IDs, oldest first, or nil when there are none. Every error wraps
// plugin.ErrInvalidRequest and names the batch and the window.
func (req *PlanRequest) FutureIDs(m *region.Mapper, tables []plugin.Table) ([][]int64, error) {
	if req == nil {
		return nil, fmt.Errorf("%w: nil plan request", plugin.ErrInvalidRequest)
	}
	if len(req.Future) == 0 {
		return nil, nil
	}
	n, err := req.count(len(tables))
	if err != nil {
		return nil, fmt.Errorf("batch %d: %w", req.Seq, err)
	}
	out := make([][]int64, len(req.Future))
	prev := req.Seq
	for j, w := range req.Future {
		if w.Seq <= prev {
			return nil, fmt.Errorf("batch %d: %w: future window %d is batch %d, not after batch %d",
				req.Seq, plugin.ErrInvalidRequest, j, w.Seq, prev)
		}
		prev = w.Seq
		ids, err := checked.Int64s(m, w.IDs, n, "ids")
		if err == nil {
			err = checkRows(ids, req.TableOffsets, tables)
		}
		if err != nil {
			return nil, fmt.Errorf("batch %d: future window %d (batch %d): %w", req.Seq, j, w.Seq, err)
		}
		out[j] = ids
	}
	return out, nil
}

// count checks TableOffsets for a run of tables tables and returns the
// number of IDs.
func (req *PlanRequest) count(tables int) (int64, error) {
	off := req.TableOffsets
	if len(off) != tables+1 {
		return 0, fmt.Errorf("%w: %d table offsets for %d tables, want %d",
			plugin.ErrInvalidRequest, len(off), tables, tables+1)
	}
	if off[0] != 0 {
		return 0, fmt.Errorf("%w: table offsets start at %d, want 0", plugin.ErrInvalidRequest, off[0])
	}
	for t := range tables {
		if off[t+1] < off[t] {
			return 0, fmt.Errorf("%w: table %d offsets decrease (%d > %d)", plugin.ErrInvalidRequest, t, off[t], off[t+1])
		}
	}
	n := off[tables]
	if n > math.MaxInt64/24 {
		return 0, fmt.Errorf("%w: %d IDs overflow the victims array (three int64s per ID)", plugin.ErrInvalidRequest, n)
	}
	return n, nil
}

// checkRows checks that every ID, laid out by offsets, is a row of its
// table.
func checkRows(ids, offsets []int64, tables []plugin.Table) error {
	for t, tab := range tables {
		lo := offsets[t]
		// One unsigned compare per ID: a negative ID is a huge uint64.
		rows := uint64(max(tab.Rows, 0))
		for i, id := range ids[lo:offsets[t+1]] {
			if uint64(id) >= rows {
				return fmt.Errorf("%w: table %d: id %d at position %d outside [0, %d)",
					plugin.ErrInvalidRequest, t, id, lo+int64(i), tab.Rows)
			}
		}
	}
	return nil
}
