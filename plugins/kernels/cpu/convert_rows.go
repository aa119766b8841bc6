package cpu

import (
	"unsafe"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/kernel/quant"
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
	dequantize := quant.DequantizeRow
	if ahead > 0 && 4*len(b.Rows)*(b.Table.Dim+b.Table.StateFloats) >= streamBytes {
		dequantize = quant.DequantizeRowStream
		defer quant.StreamFence()
	}
	return b.DequantizeWith(func(i int) { prefetchGroup(b, i, ahead) }, dequantize)
}

// quantizeRows is kernel.ConvertBlock.Quantize with prefetching.
func quantizeRows(b *kernel.ConvertBlock, table int, r quant.Rounding, seed, batch uint64, ahead int) kernel.Result {
	return b.QuantizeWith(table, r, seed, batch, func(i int) { prefetchGroup(b, i, ahead) })
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
