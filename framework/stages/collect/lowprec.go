package collect

import (
	"context"
	"errors"
	"fmt"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
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
	pending    [][]pendingRow // per table
	rows, fp32 *region.Region // created on the first batch that needs them
	capacity   int64
	mapper     region.Mapper
	noConvert  bool
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
	if err := ls.dequantize(ctx, c.set.Kernel, req); err != nil {
		return fmt.Errorf("batch %d: staging missed rows: %s: %w", seq, kernel.OpDequantize, err)
	}
	fp := region.Float32s(ls.fp32.Bytes())
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
// on the stage's regions (made on first need, room for capacity rows);
// ids are each table's rows.
func (ls *lowStaging) request(c *collector, seq uint64, capacity int64) (*kernel.ConvertRequest, [][]int64, error) {
	tabs := c.set.Tables
	stride := int64(c.set.Layout.Stride)
	if ls.rows == nil {
		var err error
		if ls.rows, err = region.Create("collect-missed-ids", max(8*capacity, 64)); err != nil {
			return nil, nil, fmt.Errorf("collect scratch: %w", err)
		}
		if ls.fp32, err = region.Create("collect-missed-rows", max(4*capacity*stride, 64)); err != nil {
			return nil, nil, fmt.Errorf("collect scratch: %w", err)
		}
		ls.capacity = capacity
	}
	n := tabs.Len()
	req := &kernel.ConvertRequest{Tables: tabs.Low(), Rows: ls.rows.Ref(), FP32: ls.fp32.Ref(),
		RowStart: make([]int64, n), Counts: make([]int64, n), FP32Start: make([]int64, n)}
	list := region.Int64s(ls.rows.Bytes())
	ids := make([][]int64, n)
	at := int64(0)
	for t, pend := range ls.pending {
		if at+int64(len(pend)) > ls.capacity {
			return nil, nil, fmt.Errorf("batch %d: %d missed rows, the staging holds %d", seq, at+int64(len(pend)), ls.capacity)
		}
		req.RowStart[t], req.Counts[t], req.FP32Start[t] = at, int64(len(pend)), at*stride
		for _, p := range pend {
			list[at] = p.row
			ids[t] = append(ids[t], p.row)
			at++
		}
	}
	return req, ids, nil
}

// dequantize makes the call on the kernel when it has the operator, else
// in this process with the SDK's reference conversion.
func (ls *lowStaging) dequantize(ctx context.Context, k kernel.Kernel, req *kernel.ConvertRequest) error {
	if q, ok := k.(kernel.Quantizer); ok && !ls.noConvert {
		_, err := q.Dequantize(ctx, req)
		if !errors.Is(err, plugin.ErrUnsupported) {
			return err
		}
		ls.noConvert = true
	}
	_, err := kernel.Convert(&ls.mapper, req, false)
	return err
}

// close removes the regions and unmaps what the in-process conversion
// mapped.
func (ls *lowStaging) close() error {
	var errs []error
	for _, r := range []*region.Region{ls.rows, ls.fp32} {
		if r != nil {
			errs = append(errs, r.Close())
		}
	}
	return errors.Join(append(errs, ls.mapper.Close())...)
}

// Close removes the staging's regions.
func (c *collector) Close(context.Context) error { return c.low.close() }
