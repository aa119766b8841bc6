package insert

import (
	"context"
	"errors"
	"fmt"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
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
	rows, fp32 *region.Region // created on the first batch with such victims
	capacity   int64          // victims they hold
	mapper     region.Mapper
	noConvert  bool
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
	if err := in.low.quantize(ctx, in.set.Kernel, req); err != nil {
		return fmt.Errorf("batch %d: write-back: %s: %w", seq, kernel.OpQuantize, err)
	}
	for t, rows := range ids {
		tabs.MarkWritten(t, rows)
	}
	return nil
}

// request groups the low-precision tables' victims by table into the
// stage's regions (made on first need, room for capacity victims) and
// names them in a quantize request; ids are each table's rows.
func (lw *lowWriteBack) request(in *inserter, seq uint64, victims []int64, victimRows []float32, byTable [][]int64, capacity int64) (*kernel.ConvertRequest, [][]int64, error) {
	tabs := in.set.Tables
	stride := int64(in.set.Layout.Stride)
	if lw.rows == nil {
		var err error
		if lw.rows, err = region.Create("insert-victim-ids", max(8*capacity, 64)); err != nil {
			return nil, nil, fmt.Errorf("insert scratch: %w", err)
		}
		if lw.fp32, err = region.Create("insert-victim-rows", max(4*capacity*stride, 64)); err != nil {
			return nil, nil, fmt.Errorf("insert scratch: %w", err)
		}
		lw.capacity = capacity
	}
	rounding, seed := tabs.Rounding()
	n := tabs.Len()
	req := &kernel.ConvertRequest{Tables: tabs.Low(), Rows: lw.rows.Ref(), FP32: lw.fp32.Ref(),
		RowStart: make([]int64, n), Counts: make([]int64, n), FP32Start: make([]int64, n),
		Rounding: rounding, Seed: seed, Batch: seq}
	list, rows := region.Int64s(lw.rows.Bytes()), region.Float32s(lw.fp32.Bytes())
	ids := make([][]int64, n)
	at := int64(0)
	for t, vs := range byTable {
		if at+int64(len(vs)) > lw.capacity {
			return nil, nil, fmt.Errorf("batch %d: %d victims, the write-back holds %d", seq, at+int64(len(vs)), lw.capacity)
		}
		req.RowStart[t], req.Counts[t], req.FP32Start[t] = at, int64(len(vs)), at*stride
		for _, i := range vs {
			list[at] = victims[3*i+1]
			copy(rows[at*stride:(at+1)*stride], victimRows[i*stride:(i+1)*stride])
			ids[t] = append(ids[t], list[at])
			at++
		}
	}
	return req, ids, nil
}

// quantize makes the call on the kernel when it has the operator, else in
// this process with the SDK's reference conversion.
func (lw *lowWriteBack) quantize(ctx context.Context, k kernel.Kernel, req *kernel.ConvertRequest) error {
	if q, ok := k.(kernel.Quantizer); ok && !lw.noConvert {
		_, err := q.Quantize(ctx, req)
		if !errors.Is(err, plugin.ErrUnsupported) {
			return err
		}
		lw.noConvert = true
	}
	_, err := kernel.Convert(&lw.mapper, req, true)
	return err
}

// close removes the regions and unmaps what the in-process conversion
// mapped.
func (lw *lowWriteBack) close() error {
	var errs []error
	for _, r := range []*region.Region{lw.rows, lw.fp32} {
		if r != nil {
			errs = append(errs, r.Close())
		}
	}
	return errors.Join(append(errs, lw.mapper.Close())...)
}
