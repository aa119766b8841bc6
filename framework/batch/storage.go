package batch

import (
	"errors"
	"fmt"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/region"
)

// Storage is ScratchPipe's Storage array: the device-side cache rows, one
// region of Capacity×Dim float32 per table, addressed by slot. The cache
// plugin's plan (its Hit-Map) decides which row a slot is for; Storage holds
// the row's values and records which row each slot actually holds, so that
// a plan that disagrees with what was inserted is caught instead of
// training on the wrong row, and so that every resident row can be written
// back at the end of a run.
//
// The slot→row map lives in this process only: the stages that fill Storage
// (insert) and check it (collect) run in the runtime's process, while the
// rows themselves are in shared memory for kernels in or out of process.
// Storage does no locking: the stages that use it run only in sequential
// graphs, one batch at a time.
type Storage struct {
	Capacity int64
	Dim      int
	regions  []*region.Region
	rowOf    [][]int64 // [table][slot]: resident row, or -1
}

// NewStorage creates n tables of capacity zeroed, empty slots.
func NewStorage(n int, capacity int64, dim int) (*Storage, error) {
	if capacity < 1 || dim < 1 {
		return nil, fmt.Errorf("storage: capacity and dim must be ≥ 1, got %d×%d", capacity, dim)
	}
	s := &Storage{Capacity: capacity, Dim: dim}
	for i := 0; i < n; i++ {
		r, err := region.Create(fmt.Sprintf("storage%d", i), capacity*int64(dim)*4)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("storage table %d: %w", i, err)
		}
		s.regions = append(s.regions, r)
		rows := make([]int64, capacity)
		for j := range rows {
			rows[j] = -1
		}
		s.rowOf = append(s.rowOf, rows)
	}
	return s, nil
}

// Len is the number of tables.
func (s *Storage) Len() int { return len(s.regions) }

// Kernel returns the Storage tables as the kernel SDK describes them: a
// kernel indexes them by slot.
func (s *Storage) Kernel() []kernel.Table {
	ks := make([]kernel.Table, len(s.regions))
	for i, r := range s.regions {
		ks[i] = kernel.Table{Data: r.Ref(), Rows: s.Capacity, Dim: s.Dim}
	}
	return ks
}

// ValidSlot reports whether slot addresses a row of table.
func (s *Storage) ValidSlot(table int, slot int64) bool {
	return table >= 0 && table < len(s.regions) && slot >= 0 && slot < s.Capacity
}

// Row returns the values in one slot (shared memory). The slot must be
// valid.
func (s *Storage) Row(table int, slot int64) []float32 {
	data := region.Float32s(s.regions[table].Bytes())
	return data[slot*int64(s.Dim) : (slot+1)*int64(s.Dim)]
}

// RowOf is the row a slot holds, or -1 when it is empty.
func (s *Storage) RowOf(table int, slot int64) int64 { return s.rowOf[table][slot] }

// Fill writes row's values into slot and records that the slot holds it.
func (s *Storage) Fill(table int, slot, row int64, values []float32) {
	copy(s.Row(table, slot), values)
	s.rowOf[table][slot] = row
}

// Evict marks a slot empty, after its row was written back.
func (s *Storage) Evict(table int, slot int64) { s.rowOf[table][slot] = -1 }

// Resident counts the slots that hold a row.
func (s *Storage) Resident() int64 {
	var n int64
	for _, rows := range s.rowOf {
		for _, r := range rows {
			if r >= 0 {
				n++
			}
		}
	}
	return n
}

// Flush writes every resident row back to its host table and returns how
// many it wrote. The rows stay resident: Storage holds the trained values,
// the host tables held stale copies, and after Flush both agree, so the
// model digest (taken over the host tables) is the model that trained.
func (s *Storage) Flush(t *Tables) (int64, error) {
	if t.Len() != s.Len() || t.Dim != s.Dim {
		return 0, fmt.Errorf("storage flush: %d tables of dim %d into %d of dim %d", s.Len(), s.Dim, t.Len(), t.Dim)
	}
	var n int64
	for table, rows := range s.rowOf {
		for slot, row := range rows {
			if row < 0 {
				continue
			}
			if row >= t.Rows {
				return n, fmt.Errorf("storage flush: table %d slot %d holds row %d outside [0, %d)", table, slot, row, t.Rows)
			}
			copy(t.Row(table, row), s.Row(table, int64(slot)))
			n++
		}
	}
	return n, nil
}

// Close removes the Storage regions.
func (s *Storage) Close() error {
	var errs []error
	for _, r := range s.regions {
		errs = append(errs, r.Close())
	}
	s.regions, s.rowOf = nil, nil
	return errors.Join(errs...)
}
