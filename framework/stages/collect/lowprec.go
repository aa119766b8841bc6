package collect

import (
	"context"
	"fmt"

	"github.com/flowrun/flowrun/framework/stages/internal/convert"
	"github.com/flowrun/flowrun/sdk/kernel"
)

// lowStaging reads a batch's missed rows of host tables stored below FP32
// (embedding.precision) with one dequantize call on the kernel for the
// batch (batch-granular, tables in parallel, the kernel's own row loop)
// instead of an up-conversion per row in this process: stageRow defers
// such rows (pending), and readLow names them, grouped by table, in a
// request whose FP32 rows land in a region of the stage's, then copies
// each into its place in miss_rows. The values are batch.Tables.ReadRow's:
// the same conversion, and a row still at its initial value
// (quantize_init: false) gets InitValues, as ReadRow gives it. A kernel
// without the operators is answered by the SDK's reference conversion in
// this process.
type lowStaging struct {
	pending [][]pendingRow  // per table
	scratch convert.Scratch // the call's regions, made on first need
}

// pendingRow is a missed row of a low-precision table and its place in
// miss_rows.
type pendingRow struct{ row, at int64 }

// add records row of table t for place at of miss_rows.
func (ls *lowStaging) add(tables, t int, row, at int64) {
	if ls.pending == nil {
		ls.pending = make([][]pendingRow, tables)
	}
	ls.pending[t] = append(ls.pending[t], pendingRow{row, at})
}

// readLow converts the pending rows into miss_rows (stride floats a row;
// room for capacity rows in all) and clears them.
func (c *collector) readLow(ctx context.Context, seq uint64, missRows []float32) error {
	ls := &c.low
	n := int64(0)
	for _, p := range ls.pending {
		n += int64(len(p))
	}
	if n == 0 {
		return nil
	}
	tabs := c.set.Tables
	stride := int64(c.set.Layout.Stride)
	req, ids, err := ls.request(c, seq, int64(len(missRows))/max(stride, 1))
	if err != nil {
		return err
	}
	if err := tabs.TouchTables(ids); err != nil { // as ReadRow touches
		return err
	}
	if err := ls.scratch.Convert(ctx, c.set.Kernel, req, false); err != nil {
		return fmt.Errorf("batch %d: staging missed rows: %s: %w", seq, kernel.OpDequantize, err)
	}
	fp := ls.scratch.Rows()
	for t, pend := range ls.pending {
		at := req.FP32Start[t]
		for i, p := range pend {
			src := fp[at+int64(i)*stride : at+int64(i+1)*stride]
			if tabs.Fresh(t, p.row) {
				tabs.InitValues(t, p.row, src)
			}
			copy(missRows[p.at*stride:(p.at+1)*stride], src)
		}
		ls.pending[t] = pend[:0]
	}
	return nil
}

// request names the pending rows, table by table, in a dequantize request
// on the stage's scratch (made on first need, room for capacity rows);
// ids are each table's rows.
func (ls *lowStaging) request(c *collector, seq uint64, capacity int64) (*kernel.ConvertRequest, [][]int64, error) {
	tabs := c.set.Tables
	req, err := ls.scratch.Request("collect-missed", tabs.Low(), capacity, int64(c.set.Layout.Stride))
	if err != nil {
		return nil, nil, err
	}
	list := ls.scratch.IDs()
	ids := make([][]int64, tabs.Len())
	at := int64(0)
	for t, pend := range ls.pending {
		if err := ls.scratch.Place(req, seq, t, at, int64(len(pend)), "missed rows"); err != nil {
			return nil, nil, err
		}
		for _, p := range pend {
			list[at] = p.row
			ids[t] = append(ids[t], p.row)
			at++
		}
	}
	return req, ids, nil
}

// Close removes the staging's regions.
func (c *collector) Close(context.Context) error { return c.low.scratch.Close() }
