package kernel

import (
	"fmt"
	"math"

	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
	"github.com/flowrun/flowrun/sdk/region/checked"
)

// TableView is one table of a kernel request, mapped from shared memory
// and checked by the request's View. Data and Pooled are the host's
// memory: a kernel reads and writes them in place.
type TableView struct {
	// Data is the table's Rows·Stride floats, row-major; nil where the
	// request reads no rows (ExpandCoalesce).
	Data []float32
	Rows int64
	Dim  int
	// Stride is the floats from one row to the next (Table.RowStride).
	Stride int
	// Indices are the table's lookups from its IndexStart on; bag b is
	// Indices[Offsets[b]:Offsets[b+1]], each index a row in [0, Rows).
	Indices []int64
	// Offsets has Batch+1 entries that never decrease.
	Offsets []int64
	// Pooled is the table's [bag][Dim] block of Out (GatherReduce) or
	// Grads (Scatter, ExpandCoalesce).
	Pooled []float32
}

// Bag returns the indices of bag b.
func (v *TableView) Bag(b int) []int64 { return v.Indices[v.Offsets[b]:v.Offsets[b+1]] }

// Lookups is the number of indices in the table's bags.
func (v *TableView) Lookups() int64 { return v.Offsets[len(v.Offsets)-1] - v.Offsets[0] }

// CoalescedBlock is one table's block of a Coalesced: its rows and their
// gradients, Dim floats a row.
type CoalescedBlock struct {
	Rows  []int64
	Grads []float32
}

// View checks req and maps its tables, bags and Out through m:
//
//   - Reduce is Sum or Mean; there is one IndexStart per table; Batch is
//     in [0, 2³¹);
//   - every table has Dim ≥ 1, Rows ≥ 0 and Stride 0 or ≥ Dim, and its Data
//     holds Rows·RowStride floats;
//   - Offsets holds Batch+1 non-decreasing, non-negative entries a table,
//     Indices every table's lookups, each a row of its table;
//   - Out holds [table][bag][Dim] floats.
//
// Every error wraps plugin.ErrInvalidRequest. View writes nothing.
func (req *GatherReduceRequest) View(m *region.Mapper) ([]TableView, error) {
	if req == nil {
		return nil, fmt.Errorf("%w: nil gather-reduce request", plugin.ErrInvalidRequest)
	}
	return viewTables(m, req.Tables, req.Bags, req.Reduce, req.Out, "out", true)
}

// View checks req as GatherReduceRequest.View does, with Grads in Out's
// place, and its update as CheckUpdate does.
func (req *ScatterRequest) View(m *region.Mapper) ([]TableView, error) {
	if req == nil {
		return nil, fmt.Errorf("%w: nil scatter request", plugin.ErrInvalidRequest)
	}
	if err := CheckUpdate(req.Tables, req.Optimizer, req.LearningRate, req.Epsilon); err != nil {
		return nil, err
	}
	return viewTables(m, req.Tables, req.Bags, req.Reduce, req.Grads, "grads", true)
}

// ExpandCoalesceView is an ExpandCoalesceRequest, mapped and checked.
type ExpandCoalesceView struct {
	// Tables have no Data: expand-coalesce reads no rows.
	Tables []TableView
	// Out has room for as many rows a table as its bags have lookups.
	Out []CoalescedBlock
}

// View checks req as ScatterRequest.View does (the tables for their shape
// only: their rows are not read) and maps Out with room for every lookup
// of each table, the tables' blocks apart.
func (req *ExpandCoalesceRequest) View(m *region.Mapper) (*ExpandCoalesceView, error) {
	if req == nil {
		return nil, fmt.Errorf("%w: nil expand-coalesce request", plugin.ErrInvalidRequest)
	}
	tables, err := viewTables(m, req.Tables, req.Bags, req.Reduce, req.Grads, "grads", false)
	if err != nil {
		return nil, err
	}
	capacity := make([]int64, len(tables))
	for t := range tables {
		capacity[t] = tables[t].Lookups()
	}
	out, err := viewCoalesced(m, req.Tables, req.Out, capacity, "out")
	if err != nil {
		return nil, err
	}
	return &ExpandCoalesceView{Tables: tables, Out: out}, nil
}

// ApplyView is an ApplyRequest, mapped and checked.
type ApplyView struct {
	// Data is each table's Rows·RowStride floats.
	Data [][]float32
	// Coalesced is each table's Counts[t] rows and their gradients, every
	// row one of its table.
	Coalesced []CoalescedBlock
}

// View checks req's update (CheckUpdate), its tables and its coalesced
// blocks (one count a table, the blocks apart, every row one of its
// table) and maps them through m.
func (req *ApplyRequest) View(m *region.Mapper) (*ApplyView, error) {
	if req == nil {
		return nil, fmt.Errorf("%w: nil apply request", plugin.ErrInvalidRequest)
	}
	if err := CheckUpdate(req.Tables, req.Optimizer, req.LearningRate, req.Epsilon); err != nil {
		return nil, err
	}
	c := req.Coalesced
	if len(c.Counts) != len(req.Tables) {
		return nil, fmt.Errorf("%w: %d counts for %d tables", plugin.ErrInvalidRequest, len(c.Counts), len(req.Tables))
	}
	in, err := viewCoalesced(m, req.Tables, c, c.Counts, "coalesced")
	if err != nil {
		return nil, err
	}
	v := &ApplyView{Data: make([][]float32, len(req.Tables)), Coalesced: in}
	for t, tab := range req.Tables {
		if v.Data[t], err = tableData(m, t, tab); err != nil {
			return nil, err
		}
		for _, r := range in[t].Rows {
			if r < 0 || r >= tab.Rows {
				return nil, fmt.Errorf("%w: table %d: row %d outside [0, %d)", plugin.ErrInvalidRequest, t, r, tab.Rows)
			}
		}
		if in[t].Rows, err = positions(m, t, tab, in[t].Rows, 0); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// CheckUpdate validates an optimizer step's parameters against the tables
// it updates: the optimizer is known (else plugin.ErrUnsupported), the
// learning rate and ε finite, and every row wide enough for its state.
func CheckUpdate(tables []Table, opt Optimizer, lr, eps float32) error {
	switch opt {
	case SGD, Adagrad, RowWiseAdagrad:
	default:
		return fmt.Errorf("optimizer %d: %w", opt, plugin.ErrUnsupported)
	}
	if x := float64(lr); math.IsNaN(x) || math.IsInf(x, 0) {
		return fmt.Errorf("%w: learning rate %v", plugin.ErrInvalidRequest, lr)
	}
	if x := float64(eps); opt != SGD && (math.IsNaN(x) || math.IsInf(x, 0) || x < 0) {
		return fmt.Errorf("%w: epsilon %v", plugin.ErrInvalidRequest, eps)
	}
	for t, tab := range tables {
		if need := tab.Dim + StateFloats(opt, tab.Dim); tab.RowStride() < need {
			return fmt.Errorf("%w: table %d: %s needs a stride of at least %d floats (dim %d + state), got %d",
				plugin.ErrInvalidRequest, t, opt, need, tab.Dim, tab.RowStride())
		}
	}
	return nil
}

// viewTables checks a request's tables and bags and maps them. pooledRef is
// Out (gather-reduce) or Grads, float32 [table][bag][dim]. Without
// withData the tables are checked for shape only and get no rows.
func viewTables(m *region.Mapper, tables []Table, bags Bags, reduce Reduce, pooledRef region.Ref, pooledName string, withData bool) ([]TableView, error) {
	if reduce != Sum && reduce != Mean {
		return nil, fmt.Errorf("%w: unknown reduce %d", plugin.ErrInvalidRequest, reduce)
	}
	if len(bags.IndexStart) != len(tables) {
		return nil, fmt.Errorf("%w: %d index starts for %d tables", plugin.ErrInvalidRequest, len(bags.IndexStart), len(tables))
	}
	if bags.Batch < 0 || bags.Batch > math.MaxInt32 {
		return nil, fmt.Errorf("%w: batch must be in [0, 2³¹), got %d", plugin.ErrInvalidRequest, bags.Batch)
	}
	B := int64(bags.Batch)
	offsets, err := checked.Int64s(m, bags.Offsets, int64(len(tables))*(B+1), "offsets")
	if err != nil {
		return nil, err
	}
	views := make([]TableView, len(tables))
	var nIndices, pooledLen int64
	for t, tab := range tables {
		off := offsets[int64(t)*(B+1) : int64(t+1)*(B+1)]
		if err := checkBags(t, tab, off, bags.IndexStart[t]); err != nil {
			return nil, err
		}
		nIndices = max(nIndices, bags.IndexStart[t]+off[B])
		var data []float32
		if withData {
			if data, err = tableData(m, t, tab); err != nil {
				return nil, err
			}
		}
		views[t] = TableView{Data: data, Rows: tab.Rows, Dim: tab.Dim, Stride: tab.RowStride(), Offsets: off}
		pooledLen += B * int64(tab.Dim)
	}
	indices, err := checked.Int64s(m, bags.Indices, nIndices, "indices")
	if err != nil {
		return nil, err
	}
	pooled, err := checked.Float32s(m, pooledRef, pooledLen, pooledName)
	if err != nil {
		return nil, err
	}
	var at int64
	for t := range views {
		v := &views[t]
		start := bags.IndexStart[t]
		v.Indices = indices[start : start+v.Offsets[B]]
		for p, r := range v.Indices[v.Offsets[0]:] {
			if r < 0 || r >= v.Rows {
				return nil, fmt.Errorf("%w: table %d: index %d at position %d outside [0, %d)",
					plugin.ErrInvalidRequest, t, r, v.Offsets[0]+int64(p), v.Rows)
			}
		}
		if withData {
			if v.Indices, err = positions(m, t, tables[t], v.Indices, v.Offsets[0]); err != nil {
				return nil, err
			}
		}
		n := B * int64(v.Dim)
		v.Pooled = pooled[at : at+n]
		at += n
	}
	return views, nil
}

// checkBags checks table t's shape, its bag offsets off and its index
// start.
func checkBags(t int, tab Table, off []int64, start int64) error {
	if tab.Dim < 1 || tab.Rows < 0 {
		return fmt.Errorf("%w: table %d: bad shape %d×%d", plugin.ErrInvalidRequest, t, tab.Rows, tab.Dim)
	}
	if off[0] < 0 {
		return fmt.Errorf("%w: table %d: negative bag offset %d", plugin.ErrInvalidRequest, t, off[0])
	}
	B := len(off) - 1
	for b := range B {
		if off[b+1] < off[b] {
			return fmt.Errorf("%w: table %d: bag %d offsets decrease (%d > %d)", plugin.ErrInvalidRequest, t, b, off[b], off[b+1])
		}
	}
	if start < 0 || off[B] > math.MaxInt64-start {
		return fmt.Errorf("%w: table %d: bad index start %d", plugin.ErrInvalidRequest, t, start)
	}
	return nil
}

// tableData checks table t's shape and stride and maps its rows.
func tableData(m *region.Mapper, t int, tab Table) ([]float32, error) {
	if tab.Dim < 1 || tab.Rows < 0 || tab.Stride < 0 || (tab.Stride != 0 && tab.Stride < tab.Dim) {
		return nil, fmt.Errorf("%w: table %d: bad shape %d×%d (stride %d)", plugin.ErrInvalidRequest, t, tab.Rows, tab.Dim, tab.Stride)
	}
	stride := int64(tab.RowStride())
	if tab.Rows > 0 && tab.Rows > math.MaxInt64/4/stride {
		return nil, fmt.Errorf("%w: table %d: %d rows of %d floats overflow", plugin.ErrInvalidRequest, t, tab.Rows, stride)
	}
	return checked.Float32s(m, tab.Data, tab.Rows*stride, fmt.Sprintf("table %d data", t))
}

// positions is rows (each in [0, tab.Rows)) as positions in tab's Data: a
// new slice for a compact table (Table.Index), rows itself otherwise.
// Entries before from (the first bag's offset) may be anything and are
// kept.
func positions(m *region.Mapper, t int, tab Table, rows []int64, from int64) ([]int64, error) {
	if tab.Index.IsZero() {
		return rows, nil
	}
	b, err := checked.Bytes(m, tab.Index, 4*tab.Rows, fmt.Sprintf("table %d index", t))
	if err != nil {
		return nil, err
	}
	index := region.Int32s(b)
	out := make([]int64, len(rows))
	copy(out[:from], rows)
	for i, r := range rows[from:] {
		p := int64(uint32(index[r])) - 1
		if p < 0 || p >= tab.Rows {
			return nil, fmt.Errorf("%w: table %d: row %d is not stored in the compact table", plugin.ErrInvalidRequest, t, r)
		}
		out[from+int64(i)] = p
	}
	return out, nil
}

// viewCoalesced maps each table's block of c with room for n[t] rows, and
// checks that no two blocks overlap (a kernel may write tables
// concurrently).
func viewCoalesced(m *region.Mapper, tables []Table, c Coalesced, n []int64, what string) ([]CoalescedBlock, error) {
	if len(c.RowStart) != len(tables) || len(c.GradStart) != len(tables) {
		return nil, fmt.Errorf("%w: %s: %d row starts and %d gradient starts for %d tables",
			plugin.ErrInvalidRequest, what, len(c.RowStart), len(c.GradStart), len(tables))
	}
	var rowsLen, gradsLen int64
	for t, tab := range tables {
		if n[t] < 0 || c.RowStart[t] < 0 || c.GradStart[t] < 0 || tab.Dim < 1 ||
			n[t] > math.MaxInt32*int64(64) || c.RowStart[t] > math.MaxInt64/2 || c.GradStart[t] > math.MaxInt64/2 {
			return nil, fmt.Errorf("%w: %s: table %d: bad block (start %d/%d, %d rows)", plugin.ErrInvalidRequest, what, t, c.RowStart[t], c.GradStart[t], n[t])
		}
		rowsLen = max(rowsLen, c.RowStart[t]+n[t])
		gradsLen = max(gradsLen, c.GradStart[t]+n[t]*int64(tab.Dim))
	}
	rows, err := checked.Int64s(m, c.Rows, rowsLen, what+" rows")
	if err != nil {
		return nil, err
	}
	grads, err := checked.Float32s(m, c.Grads, gradsLen, what+" grads")
	if err != nil {
		return nil, err
	}
	blocks := make([]CoalescedBlock, len(tables))
	for t, tab := range tables {
		blocks[t] = CoalescedBlock{
			Rows:  rows[c.RowStart[t] : c.RowStart[t]+n[t]],
			Grads: grads[c.GradStart[t] : c.GradStart[t]+n[t]*int64(tab.Dim)],
		}
		for u := range t {
			if overlap(c.RowStart[t], n[t], c.RowStart[u], n[u]) ||
				overlap(c.GradStart[t], n[t]*int64(tab.Dim), c.GradStart[u], n[u]*int64(tables[u].Dim)) {
				return nil, fmt.Errorf("%w: %s: the blocks of tables %d and %d overlap", plugin.ErrInvalidRequest, what, u, t)
			}
		}
	}
	return blocks, nil
}

// overlap reports whether [a, a+n) and [b, b+m) share an element.
func overlap(a, n, b, m int64) bool { return n > 0 && m > 0 && a < b+m && b < a+n }
