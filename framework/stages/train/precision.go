package train

import (
	"context"
	"errors"
	"fmt"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// lowPrecision reports whether some host table is stored below FP32
// (embedding.precision), so that kernels cannot work on it directly.
func (t *trainer) lowPrecision() bool {
	for tab := range t.set.Layout.Tables {
		if !t.set.Tables.Direct(tab) {
			return true
		}
	}
	return false
}

// placeHost is place for source: host when some tables are low-precision
// (mixed-precision embeddings, Sec. 3: fetch up-converts, update
// down-converts). Each such table's distinct rows are up-converted into
// FP32 scratch rows by the kernel's dequantize operator (one call for the
// batch), the bags are indexed into them, and after the update
// restoreLow stores them back with quantize, keyed by the batch. FP32
// tables train in place. Pooling and coalescing do not depend on a row's
// number, so the FP32 arithmetic is that of the table trained in place.
func (t *trainer) placeHost(ctx context.Context, b *batch.Batch, bags kernel.Bags) (*placement, []device.Op, error) {
	ids, err := batch.IDs.View(b)
	if err != nil {
		return nil, nil, err
	}
	offsets, err := batch.Offsets.View(b)
	if err != nil {
		return nil, nil, err
	}
	B := int64(bags.Batch)
	if int64(len(offsets)) < int64(len(bags.IndexStart))*(B+1) {
		return nil, nil, fmt.Errorf("batch %d: offsets array too short", b.Seq)
	}
	if err := t.ensureScratch(true); err != nil {
		return nil, nil, err
	}
	pl := &placement{bags: bags, tables: t.set.Tables.Kernel(), seq: b.Seq}
	idx := region.Int64s(t.scratchIdx.Bytes())
	for tab, start := range bags.IndexStart {
		off := offsets[int64(tab)*(B+1) : int64(tab+1)*(B+1)]
		lo, hi := start+off[0], start+off[B]
		if off[0] < 0 || hi < lo || hi > int64(len(ids)) {
			return nil, nil, fmt.Errorf("batch %d: table %d: bag offsets [%d, %d) outside the batch", b.Seq, tab, off[0], off[B])
		}
		if t.set.Tables.Direct(tab) {
			copy(idx[lo:hi], ids[lo:hi])
			continue
		}
		sc, err := t.distinctRows(b.Seq, tab, ids[lo:hi], nil, idx[lo:hi])
		if err != nil {
			return nil, nil, err
		}
		t.stagedTable(pl, sc)
	}
	pl.bags.Indices = t.scratchIdx.Ref()
	res, err := t.convert(ctx, pl, false)
	if err != nil {
		return nil, nil, fmt.Errorf("batch %d: %s: %w", b.Seq, kernel.OpDequantize, err)
	}
	return pl, []device.Op{{Name: kernel.OpDequantize, Kind: device.Read, Bytes: res.BytesRead + res.BytesWritten}}, nil
}

// restoreLow stores the staged rows back into their low-precision tables
// (kernel quantize, draws keyed by the batch) after the update.
func (t *trainer) restoreLow(ctx context.Context, pl *placement) (device.Op, error) {
	res, err := t.convert(ctx, pl, true)
	if err != nil {
		return device.Op{}, fmt.Errorf("batch %d: %s: %w", pl.seq, kernel.OpQuantize, err)
	}
	return device.Op{Name: kernel.OpQuantize, Kind: device.Write, Bytes: res.BytesRead + res.BytesWritten}, nil
}

// convert runs one quantize or dequantize request for the staged tables
// of pl: on the kernel when it has the operators, else in this process
// with the SDK's reference conversions (the same bits).
func (t *trainer) convert(ctx context.Context, pl *placement, quantize bool) (*kernel.Result, error) {
	res, err := t.convertCall(ctx, pl, quantize)
	if err != nil {
		return nil, err
	}
	tabs := t.set.Tables
	stride := int64(t.set.Layout.Stride)
	rows := region.Float32s(t.scratchRows.Bytes())
	for _, sc := range pl.staged {
		if quantize {
			tabs.MarkWritten(sc.table, sc.rows)
			continue
		}
		// A row kept at its initial value (quantize_init: false) has no
		// stored bytes for the kernel to read.
		for i, row := range sc.rows {
			if tabs.Fresh(sc.table, row) {
				tabs.InitValues(sc.table, row, rows[sc.scratchAt+int64(i)*stride:])
			}
		}
	}
	return res, nil
}

// convertCall makes the quantize or dequantize call for pl's staged rows.
func (t *trainer) convertCall(ctx context.Context, pl *placement, quantize bool) (*kernel.Result, error) {
	req, err := t.convertRequest(pl)
	if err != nil {
		return nil, err
	}
	if q, ok := t.set.Kernel.(kernel.Quantizer); ok && !t.noConvert.Load() {
		call := q.Dequantize
		if quantize {
			call = q.Quantize
		}
		res, err := call(ctx, req)
		if !errors.Is(err, plugin.ErrUnsupported) {
			return res, err
		}
		t.noConvert.Store(true)
	}
	return kernel.Convert(&t.mapper, req, quantize)
}

// convertRequest names pl's staged rows: table tab's in the rows region
// from entry tab·IDsPerTable, its FP32 rows at its scratch rows.
func (t *trainer) convertRequest(pl *placement) (*kernel.ConvertRequest, error) {
	l := t.set.Layout
	n := l.Tables
	if t.scratchList == nil {
		r, err := region.Create("train-rows", 8*int64(n)*int64(l.IDsPerTable))
		if err != nil {
			return nil, fmt.Errorf("train scratch: %w", err)
		}
		t.scratchList = r
	}
	rounding, seed := t.set.Tables.Rounding()
	req := &kernel.ConvertRequest{
		Tables: t.set.Tables.Low(), Rows: t.scratchList.Ref(), FP32: t.scratchRows.Ref(),
		RowStart: make([]int64, n), Counts: make([]int64, n), FP32Start: make([]int64, n),
		Rounding: rounding, Seed: seed, Batch: pl.seq,
	}
	list := region.Int64s(t.scratchList.Bytes())
	for _, sc := range pl.staged {
		at := int64(sc.table) * int64(l.IDsPerTable)
		copy(list[at:], sc.rows)
		req.RowStart[sc.table], req.Counts[sc.table], req.FP32Start[sc.table] = at, int64(len(sc.rows)), sc.scratchAt
	}
	return req, nil
}

// storeLow stores a training batch's staged low-precision rows back after
// the update and charges the conversion to the host.
func (t *trainer) storeLow(ctx context.Context, p *pass) error {
	if p.lowHost == nil {
		return nil
	}
	op, err := t.restoreLow(ctx, p.lowHost)
	if err != nil {
		return err
	}
	p.ops = append(p.ops, op)
	return nil
}
