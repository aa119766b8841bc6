package cpu

import (
	"unsafe"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/kernel/quant"
	"github.com/flowrun/flowrun/sdk/region"
)

// The conversions' row loops: kernel.ConvertBlock's reference loops (the
// same calls on the same rows in the same order, so the same bits, and
// the same counts) with the rows' cache lines prefetched a group ahead.
// A table of low-precision rows is read (dequantize) or written
// (quantize) at random rows, one to a few cache lines each; without the
// prefetch every row waits out a memory latency, and the loop runs at a
// tenth of the memory's bandwidth.

// convertGroup is how many rows are prefetched at once.
const convertGroup = 8

// prefetchGroup prefetches the values (and state) of the group of rows
// starting at row index i+ahead of b, if any.
func prefetchGroup(b *kernel.ConvertBlock, i, ahead int) {
	if ahead <= 0 || i%convertGroup != 0 {
		return
	}
	lo := i + ahead
	if lo >= len(b.Rows) {
		return
	}
	n := min(convertGroup, len(b.Rows)-lo)
	prefetchRows(&b.Values[0], &b.Rows[lo], n, b.Table.RowBytes())
	if sf := b.Table.StateFloats; sf > 0 {
		prefetchRows((*byte)(unsafe.Pointer(&b.State[0])), &b.Rows[lo], n, 4*sf)
	}
}

// streamBytes is the FP32 output from which dequantize stores around the
// caches (quant.DequantizeRowStream): output this much larger than a
// core's share of the last-level cache would be evicted before it is read
// anyway, and ordinary stores read every line before writing it (a third
// more memory traffic than the copy it is compared with).
const streamBytes = 8 << 20

// dequantizeRows is kernel.ConvertBlock.Dequantize with prefetching and,
// for a large output, streaming stores.
func dequantizeRows(b *kernel.ConvertBlock, ahead int) kernel.Result {
	t := b.Table
	rb, sf, stride := int64(t.RowBytes()), int64(t.StateFloats), t.Dim+t.StateFloats
	dequantize := quant.DequantizeRow
	if ahead > 0 && 4*len(b.Rows)*stride >= streamBytes {
		dequantize = quant.DequantizeRowStream
		defer quant.StreamFence()
	}
	for i, r := range b.Rows {
		prefetchGroup(b, i, ahead)
		dst := b.FP32[i*stride : (i+1)*stride]
		src := b.Values[r*rb : (r+1)*rb]
		if t.Emulated {
			copy(dst[:t.Dim], region.Float32s(src))
		} else {
			dequantize(dst[:t.Dim], src, t.Precision)
		}
		copy(dst[t.Dim:], b.State[r*sf:(r+1)*sf])
	}
	n := int64(len(b.Rows))
	return kernel.Result{BytesRead: n * (8 + rb + 4*sf), BytesWritten: n * 4 * int64(stride), FLOPs: 2 * n * int64(t.Dim)}
}

// quantizeRows is kernel.ConvertBlock.Quantize with prefetching.
func quantizeRows(b *kernel.ConvertBlock, table int, r quant.Rounding, seed, batch uint64, ahead int) kernel.Result {
	t := b.Table
	rb, sf, stride := int64(t.RowBytes()), int64(t.StateFloats), t.Dim+t.StateFloats
	for i, row := range b.Rows {
		prefetchGroup(b, i, ahead)
		src := b.FP32[i*stride : (i+1)*stride]
		dst := b.Values[row*rb : (row+1)*rb]
		key := quant.Key{Seed: seed, Table: table, Row: row, Batch: batch}
		if t.Emulated {
			vals := region.Float32s(dst)
			copy(vals, src[:t.Dim])
			quant.FakeQuantize(vals, t.Precision, r, key)
		} else {
			quant.QuantizeRow(dst, src[:t.Dim], t.Precision, r, key)
		}
		copy(b.State[row*sf:(row+1)*sf], src[t.Dim:])
	}
	n := int64(len(b.Rows))
	return kernel.Result{BytesRead: n * (8 + 4*int64(stride)), BytesWritten: n * (rb + 4*sf), FLOPs: 4 * n * int64(t.Dim)}
}

// convertAhead is how many rows ahead the conversions prefetch: the
// prefetch option (gather-reduce's distance in lookups, here in rows), 16
// by default, none with the Go loops.
func (c Config) convertAhead() int {
	switch {
	case !c.avx2():
		return 0
	case c.Prefetch == nil:
		return 16
	}
	return *c.Prefetch
}
