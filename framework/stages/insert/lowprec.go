package insert

import (
	"context"
	"fmt"

	"github.com/flowrun/flowrun/framework/stages/internal/convert"
	"github.com/flowrun/flowrun/sdk/kernel"
)

// lowWriteBack writes a batch's victims back into host tables stored below
// FP32 (embedding.precision) with one quantize call on the kernel for the
// batch (batch-granular, tables in parallel, the kernel's own row loop),
// instead of a down-conversion per row in this process: the victims' FP32
// rows and row numbers are grouped by table into regions of the stage's,
// and the kernel stores them with the draws keyed by the batch, as
// batch.Tables.WriteRow would (the same bits: both are the SDK's
// conversion). A kernel without the operators is answered by the SDK's
// reference conversion in this process. FP32 tables are written in place,
// as before.
type lowWriteBack struct {
	scratch convert.Scratch // the call's regions, made on the first batch with such victims
}

// writeBack writes victims 0..n-1 (triples in victims, FP32 rows of stride
// floats in victimRows) back into their host tables, stored by batch seq.
func (in *inserter) writeBack(ctx context.Context, seq uint64, victims []int64, victimRows []float32, n int64) error {
	tabs := in.set.Tables
	stride := int64(in.set.Layout.Stride)
	byTable := make([][]int64, tabs.Len()) // victim indices of the low-precision tables
	low := false
	for i := range n {
		t, row := int(victims[3*i]), victims[3*i+1]
		if tabs.Direct(t) {
			tabs.WriteRow(t, row, victimRows[i*stride:(i+1)*stride], seq)
			continue
		}
		byTable[t] = append(byTable[t], i)
		low = true
	}
	if !low {
		return nil
	}
	req, ids, err := in.low.request(in, seq, victims, victimRows, byTable, int64(len(victimRows))/max(stride, 1))
	if err != nil {
		return err
	}
	// A row is touched (its first-touch value stored) before it is
	// written, as WriteRow does.
	if err := tabs.TouchTables(ids); err != nil {
		return err
	}
	if err := in.low.scratch.Convert(ctx, in.set.Kernel, req, true); err != nil {
		return fmt.Errorf("batch %d: write-back: %s: %w", seq, kernel.OpQuantize, err)
	}
	for t, rows := range ids {
		tabs.MarkWritten(t, rows)
	}
	return nil
}

// request groups the low-precision tables' victims by table into the
// stage's scratch (made on first need, room for capacity victims) and
// names them in a quantize request; ids are each table's rows.
func (lw *lowWriteBack) request(in *inserter, seq uint64, victims []int64, victimRows []float32, byTable [][]int64, capacity int64) (*kernel.ConvertRequest, [][]int64, error) {
	tabs := in.set.Tables
	stride := int64(in.set.Layout.Stride)
	req, err := lw.scratch.Request("insert-victim", tabs.Low(), capacity, stride)
	if err != nil {
		return nil, nil, err
	}
	req.Rounding, req.Seed = tabs.Rounding()
	req.Batch = seq
	list, rows := lw.scratch.IDs(), lw.scratch.Rows()
	ids := make([][]int64, tabs.Len())
	at := int64(0)
	for t, vs := range byTable {
		if err := lw.scratch.Place(req, seq, t, at, int64(len(vs)), "victims"); err != nil {
			return nil, nil, err
		}
		for _, i := range vs {
			list[at] = victims[3*i+1]
			copy(rows[at*stride:(at+1)*stride], victimRows[i*stride:(i+1)*stride])
			ids[t] = append(ids[t], list[at])
			at++
		}
	}
	return req, ids, nil
}
