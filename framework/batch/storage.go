package batch

import (
	"errors"
	"fmt"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/region"
)

// Storage is ScratchPipe's Storage array: the device-side cache rows, one
// region of Capacity×Stride float32 per table, addressed by slot. A slot
// holds a whole row as the host tables lay it out (Dim values, then the
// row's optimizer state), so the state travels with the row. The cache
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
	// Capacity is the slots of the largest table (every table's, when
	// they are all the same); CapacityOf gives each table's.
	Capacity int64
	Dim      int
	// Stride is the float32s per slot: Dim, then optimizer state.
	Stride  int
	regions []*region.Region
	rowOf   [][]int64 // [table][slot]: resident row, or -1; len is the table's slots
}

// NewStorage creates n tables of capacity zeroed, empty slots of stride
// float32s (0 means dim: no optimizer state).
func NewStorage(n int, capacity int64, dim, stride int) (*Storage, error) {
	all := make([]int64, n)
	for i := range all {
		all[i] = capacity
	}
	return NewStorageSlots(all, dim, stride)
}

// NewStorageSlots creates one Storage table per entry of slots, table t of
// slots[t] zeroed, empty slots: a cache of C rows over tables of different
// sizes gives a table of r < C rows only r slots, as the cache policies cap
// their capacity (plankit.Capacity).
func NewStorageSlots(slots []int64, dim, stride int) (*Storage, error) {
	if stride == 0 {
		stride = dim
	}
	var most int64
	for _, c := range slots {
		if c < 1 {
			most = c
			break
		}
		most = max(most, c)
	}
	if most < 1 || dim < 1 || stride < dim {
		return nil, fmt.Errorf("storage: capacity and dim must be ≥ 1 and stride ≥ dim, got %d×%d stride %d", most, dim, stride)
	}
	s := &Storage{Capacity: most, Dim: dim, Stride: stride}
	for i, capacity := range slots {
		r, err := region.Create(fmt.Sprintf("storage%d", i), capacity*int64(stride)*4)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("storage table %d: %w", i, err)
		}
		// Every slot is filled as the cache warms up: dense memory, where
		// huge pages only save TLB misses.
		adviseHugePages(r)
		s.regions = append(s.regions, r)
		rows := make([]int64, capacity)
		for j := range rows {
			rows[j] = -1
		}
		s.rowOf = append(s.rowOf, rows)
	}
	return s, nil
}

// CapacityOf is the slots of table t.
func (s *Storage) CapacityOf(table int) int64 { return int64(len(s.rowOf[table])) }

// Len is the number of tables.
func (s *Storage) Len() int { return len(s.regions) }

// Kernel returns the Storage tables as the kernel SDK describes them: a
// kernel indexes them by slot.
func (s *Storage) Kernel() []kernel.Table {
	ks := make([]kernel.Table, len(s.regions))
	for i, r := range s.regions {
		ks[i] = kernel.Table{Data: r.Ref(), Rows: s.CapacityOf(i), Dim: s.Dim, Stride: s.Stride}
	}
	return ks
}

// ValidSlot reports whether slot addresses a row of table.
func (s *Storage) ValidSlot(table int, slot int64) bool {
	return table >= 0 && table < len(s.regions) && slot >= 0 && slot < s.CapacityOf(table)
}

// Row returns the Stride floats in one slot (shared memory): the row's
// values, then its optimizer state. The slot must be valid.
func (s *Storage) Row(table int, slot int64) []float32 {
	data := region.Float32s(s.regions[table].Bytes())
	return data[slot*int64(s.Stride) : (slot+1)*int64(s.Stride)]
}

// RowOf is the row a slot holds, or -1 when it is empty.
func (s *Storage) RowOf(table int, slot int64) int64 { return s.rowOf[table][slot] }

// Fill writes a row (its Stride floats) into slot and records that the
// slot holds it.
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
	if t.Len() != s.Len() || t.Dim != s.Dim || t.Stride != s.Stride {
		return 0, fmt.Errorf("storage flush: %d tables of dim %d stride %d into %d of dim %d stride %d", s.Len(), s.Dim, s.Stride, t.Len(), t.Dim, t.Stride)
	}
	var n int64
	for table, rows := range s.rowOf {
		for slot, row := range rows {
			if row < 0 {
				continue
			}
			if row >= t.RowsOf(table) {
				return n, fmt.Errorf("storage flush: table %d slot %d holds row %d outside [0, %d)", table, slot, row, t.RowsOf(table))
			}
			// A low-precision table keeps the cache's FP32 row (FlushRow).
			t.FlushRow(table, row, s.Row(table, int64(slot)))
			n++
		}
	}
	return n, nil
}

// VirtualBytes is the size of every Storage table.
func (s *Storage) VirtualBytes() int64 {
	var n int64
	for t := range s.rowOf {
		n += s.CapacityOf(t)
	}
	return n * int64(s.Stride) * 4
}

// AllocatedBytes is the memory Storage's regions hold, measured as their
// files' blocks (slots are allocated when first filled).
func (s *Storage) AllocatedBytes() (int64, error) { return allocatedBytes(s.regions) }

// Close removes the Storage regions.
func (s *Storage) Close() error {
	var errs []error
	for _, r := range s.regions {
		errs = append(errs, r.Close())
	}
	s.regions, s.rowOf = nil, nil
	return errors.Join(errs...)
}
