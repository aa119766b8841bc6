package train

import (
	"fmt"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/region"
)

// placement is where a batch's rows are trained with source: storage, and
// how to put them back.
type placement struct {
	bags   kernel.Bags
	tables []kernel.Table
	// hostLookups and lookups count the bag positions whose row lives in
	// the host table (slot -1) and all positions, for the modeled clock.
	hostLookups, lookups int64
	// staged lists, per table trained in the scratch table, where each
	// scratch row came from: restore copies them back after the update.
	staged []stagedTable
	// seq is the batch's: a low-precision host row restore writes back
	// is down-converted with draws keyed by it.
	seq uint64
}

// stagedTable is one table whose rows were staged into the scratch table:
// scratch row i came from slot[i] of Storage, or from host row row[i] when
// slot[i] is -1.
type stagedTable struct {
	table     int
	rows      []int64
	slots     []int64
	scratchAt int64 // float32 offset of the table's scratch rows
}

// place works out where each of a batch's lookups is trained when rows
// live in Storage. The plan wrote one slot per ID into the slots array,
// laid out exactly like the IDs, so for a table whose every looked-up row
// has a slot, Storage's table indexed by the slots array is the batch's
// bags: same offsets, nothing to build. A table whose every row was left
// without a slot (slot -1, a bypass) trains in its host table by ID.
//
// A table with both is ScratchPipe's Fig. 4(b), the static cache: hot rows
// in Storage, cold rows in the host table. One gather-reduce over two
// tables would pool a bag in two partial sums and change the bits, so
// those tables' rows (each distinct row once, from Storage or from its
// host table) are staged into a scratch table, the bags are indexed into
// it, and after the update each row goes back to where it came from.
//
// The cpu kernel pools a bag in bag order and coalesces a row's gradients
// in lookup-position order, whatever number the row goes by, so training a
// row in a slot, in its host table or in a scratch row gives the same bits:
// that is what lets a cached run end with the no-cache run's digest.
//
// Every row with a slot must be in it: Storage must hold the row the plan
// placed there (by this batch's insert or an earlier one's, and no later
// batch's insert may have evicted it yet). In a pipelined graph this is
// where the policy's Hit-Map, which runs ahead of Storage, is checked
// against it.
func (t *trainer) place(b *batch.Batch, bags kernel.Bags) (*placement, error) {
	st := t.set.Storage
	if st == nil {
		return nil, fmt.Errorf("batch %d: source %s, but the run has no Storage", b.Seq, SourceStorage)
	}
	var ids, slots, offsets []int64
	var err error
	for _, x := range []struct {
		array batch.Array[int64]
		dst   *[]int64
	}{{batch.Slots, &slots}, {batch.IDs, &ids}, {batch.Offsets, &offsets}} {
		if *x.dst, err = x.array.View(b); err != nil {
			return nil, err
		}
	}
	B := int64(bags.Batch)
	if int64(len(offsets)) < int64(len(bags.IndexStart))*(B+1) {
		return nil, fmt.Errorf("batch %d: offsets array too short", b.Seq)
	}
	pl := &placement{bags: bags, tables: st.Kernel(), seq: b.Seq}
	where, err := pl.locate(b.Seq, st, ids, slots, offsets)
	if err != nil {
		return nil, err
	}
	mixed := false
	for tab, w := range where {
		// A low-precision host table is trained on FP32 copies of its
		// rows, staged as a mixed table's are.
		if w == inHost && !t.set.Tables.Direct(tab) {
			where[tab] = inStorage | inHost
		}
		mixed = mixed || where[tab] == inStorage|inHost
	}
	if pl.hostLookups == 0 {
		// Every row in Storage: the slots array is the index array.
		pl.bags.Indices, err = batch.Slots.Ref(b)
		return pl, err
	}
	// Some tables train elsewhere: a per-batch index array of our own.
	if err := t.ensureScratch(mixed); err != nil {
		return nil, err
	}
	idx := region.Int64s(t.scratchIdx.Bytes())
	host := t.set.Tables.Kernel()
	for tab, start := range bags.IndexStart {
		off := offsets[int64(tab)*(B+1) : int64(tab+1)*(B+1)]
		lo, hi := start+off[0], start+off[B]
		switch where[tab] {
		case inHost:
			copy(idx[lo:hi], ids[lo:hi])
			pl.tables[tab] = host[tab]
		case inHost | inStorage:
			if err := t.stageRows(b.Seq, pl, tab, ids[lo:hi], slots[lo:hi], idx[lo:hi]); err != nil {
				return nil, err
			}
		default:
			copy(idx[lo:hi], slots[lo:hi])
		}
	}
	pl.bags.Indices = t.scratchIdx.Ref()
	return pl, nil
}

// Where a table's looked-up rows live: a bit per place.
const (
	inStorage = 1 << iota
	inHost
)

// locate finds, per table, where the looked-up rows live (inStorage,
// inHost or both) and counts the lookups, checking that every row with a
// slot is in it.
func (pl *placement) locate(seq uint64, st *batch.Storage, ids, slots, offsets []int64) ([]int, error) {
	B := int64(pl.bags.Batch)
	where := make([]int, len(pl.bags.IndexStart))
	for tab, start := range pl.bags.IndexStart {
		off := offsets[int64(tab)*(B+1) : int64(tab+1)*(B+1)]
		if off[0] < 0 || off[B] < off[0] || start+off[B] > int64(len(slots)) {
			return nil, fmt.Errorf("batch %d: table %d: bag offsets [%d, %d) outside the batch", seq, tab, off[0], off[B])
		}
		for p := start + off[0]; p < start+off[B]; p++ {
			s, row := slots[p], ids[p]
			switch {
			case s < 0:
				where[tab] |= inHost
				pl.hostLookups++
			case s >= st.Capacity:
				return nil, fmt.Errorf("batch %d: table %d: row %d (lookup %d) has slot %d, outside Storage's %d slots", seq, tab, row, p-start, s, st.Capacity)
			default:
				where[tab] |= inStorage
				if held := st.RowOf(tab, s); held != row {
					return nil, fmt.Errorf("batch %d: table %d: row %d (lookup %d) should be in slot %d, which holds row %d: the plan's Hit-Map and Storage disagree (a row evicted or not yet inserted)",
						seq, tab, row, p-start, s, held)
				}
			}
			pl.lookups++
		}
	}
	return where, nil
}

// stageRows copies each distinct row of table tab's lookups (ids, their slots)
// into the table's scratch rows, from Storage or from the host table,
// points the lookups' idx at them and trains the table there.
func (t *trainer) stageRows(seq uint64, pl *placement, tab int, ids, slots, idx []int64) error {
	sc, err := t.distinctRows(seq, tab, ids, slots, idx)
	if err != nil {
		return err
	}
	stride := int64(t.set.Layout.Stride)
	at := sc.scratchAt
	rows := region.Float32s(t.scratchRows.Bytes())
	for i, row := range sc.rows {
		dst := rows[at+int64(i)*stride : at+int64(i+1)*stride]
		if s := sc.slots[i]; s >= 0 {
			copy(dst, t.set.Storage.Row(tab, s))
		} else {
			t.set.Tables.ReadRow(tab, row, dst)
		}
	}
	t.stagedTable(pl, sc)
	return nil
}

// stagedTable trains table sc.table on its scratch rows.
func (t *trainer) stagedTable(pl *placement, sc stagedTable) {
	stride := int64(t.set.Layout.Stride)
	pl.tables[sc.table] = kernel.Table{
		Data: t.scratchRows.Ref().Sub(4*sc.scratchAt, 4*int64(len(sc.rows))*stride),
		Rows: int64(len(sc.rows)), Dim: t.set.Layout.Dim, Stride: t.set.Layout.Stride,
	}
	pl.staged = append(pl.staged, sc)
}

// distinctRows numbers the distinct rows of table tab's lookups (ids, their
// slots) in order of first lookup and points the lookups' idx at them.
func (t *trainer) distinctRows(seq uint64, tab int, ids, slots, idx []int64) (stagedTable, error) {
	stride := int64(t.set.Layout.Stride)
	at := int64(tab) * int64(t.set.Layout.IDsPerTable) * stride
	sc := stagedTable{table: tab, scratchAt: at}
	clear(t.scratchOf)
	for p, row := range ids {
		s := int64(-1) // no slots: every row from its host table
		if slots != nil {
			s = slots[p]
		}
		i, ok := t.scratchOf[row]
		if !ok {
			i = int64(len(sc.rows))
			t.scratchOf[row] = i
			sc.rows = append(sc.rows, row)
			sc.slots = append(sc.slots, s)
		} else if sc.slots[i] != s {
			return sc, fmt.Errorf("batch %d: table %d: row %d is looked up with slot %d and slot %d", seq, tab, row, sc.slots[i], s)
		}
		idx[p] = i
	}
	return sc, nil
}

// restore writes every staged row back to its slot or host row, after the
// update.
func (t *trainer) restore(pl *placement) {
	if len(pl.staged) == 0 {
		return
	}
	stride := int64(t.set.Layout.Stride)
	rows := region.Float32s(t.scratchRows.Bytes())
	for _, sc := range pl.staged {
		for i, row := range sc.rows {
			src := rows[sc.scratchAt+int64(i)*stride : sc.scratchAt+int64(i+1)*stride]
			if s := sc.slots[i]; s >= 0 {
				copy(t.set.Storage.Row(sc.table, s), src)
			} else {
				t.set.Tables.WriteRow(sc.table, row, src, pl.seq)
			}
		}
	}
}

// ensureScratch creates, on first need, the index array (one int64 per
// lookup of a batch) and, when rows must be staged, the scratch tables
// (room for every lookup of a batch to be a distinct row, per table).
// Both are sparse regions: only the pages a batch touches cost memory.
func (t *trainer) ensureScratch(rows bool) error {
	l := t.set.Layout
	ids := int64(l.Tables) * int64(l.IDsPerTable)
	if t.scratchIdx == nil {
		r, err := region.Create("train-indices", 8*ids)
		if err != nil {
			return fmt.Errorf("train scratch: %w", err)
		}
		t.scratchIdx = r
	}
	if rows && t.scratchRows == nil {
		r, err := region.Create("train-scratch", 4*ids*int64(l.Stride))
		if err != nil {
			return fmt.Errorf("train scratch: %w", err)
		}
		t.scratchRows = r
		t.scratchOf = map[int64]int64{}
	}
	return nil
}

// charge splits a batch's embedding work between the host and the compute
// device: the share of lookups whose rows live in the host table is
// gathered and updated there and its pooled sums and their gradients cross
// the link (Fig. 4b); the rest runs where the dense model runs and crosses
// nothing.
func (pl *placement) charge(embedding, compute []device.Op) (host, gpu []device.Op) {
	f := 0.0
	if pl.lookups > 0 {
		f = float64(pl.hostLookups) / float64(pl.lookups)
	}
	scale := func(op device.Op, f float64) device.Op {
		op.Bytes = int64(float64(op.Bytes) * f)
		op.FLOPs = int64(float64(op.FLOPs) * f)
		return op
	}
	for _, op := range embedding {
		if f > 0 {
			host = append(host, scale(op, f))
		}
		if f < 1 {
			gpu = append(gpu, scale(op, 1-f))
		}
	}
	for _, op := range compute {
		if op.Kind == device.Transfer {
			if f > 0 {
				gpu = append(gpu, scale(op, f))
			}
			continue
		}
		gpu = append(gpu, op)
	}
	return host, gpu
}
