package cpu

import (
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/flowrun/flowrun/sdk/kernel"
)

// prefetchAhead is how many lookups ahead of the one being summed the AVX2
// kernel prefetches rows, by default (the prefetch option). A row of 128
// floats is 8 cache lines; 12 rows ahead keep about 100 lines in flight,
// enough to cover DRAM latency without evicting rows before they are used
// (FBGEMM uses 16; docs/benchmarks.md has the sweep).
const prefetchAhead = 12

// pooler pools every bag of a table into v.pooled: the AVX2 kernel or the
// pure-Go one. Both add each element in bag order from +0 and divide the
// sum by the bag length under Mean, so they agree bit for bit.
type pooler func(v *tableView, reduce kernel.Reduce)

// poolGo is the portable gather-reduce. Go has no prefetch instruction, so
// before summing a bag it loads one float of every cache line of the bag's
// rows: those loads are independent, so the CPU has as many misses in
// flight as it can track, and the sums that follow hit the cache (about
// 1.5× faster than summing alone). The AVX2 kernel, whose prefetch runs
// ahead across bags without waiting, is still about 1.8× faster.
func poolGo(v *tableView, reduce kernel.Reduce) {
	dim, stride := v.dim, int64(v.stride)
	var touched uint32
	for b := range len(v.off) - 1 {
		out := v.pooled[b*dim : (b+1)*dim]
		bag := v.idx[v.off[b]:v.off[b+1]]
		for _, r := range bag {
			row := v.data[r*stride:][:dim]
			for l := 0; l < dim; l += 16 {
				touched |= math.Float32bits(row[l])
			}
		}
		sumRows(out, v.data, bag, stride)
		if reduce == kernel.Mean && len(bag) > 0 {
			divide(out, float32(len(bag)))
		}
	}
	sink.Store(touched)
}

// sink keeps the touching loads from being optimised away.
var sink atomic.Uint32

// sumRows sets out to the sum of rows bag of data (row r at r*stride), in
// bag order from +0. It goes eight columns at a time, each through all the
// bag's rows, with the sums in registers: the loads of different rows are
// independent, so the CPU has many rows' cache misses in flight at once
// (row after row, one row's loads fill the reorder window), which makes it
// about twice as fast as the row-major loop.
func sumRows(out, data []float32, bag []int64, stride int64) {
	n := len(out)
	d := 0
	for ; d+8 <= n; d += 8 {
		var a0, a1, a2, a3, a4, a5, a6, a7 float32
		for _, r := range bag {
			x := data[r*stride+int64(d):][:8]
			a0 += x[0]
			a1 += x[1]
			a2 += x[2]
			a3 += x[3]
			a4 += x[4]
			a5 += x[5]
			a6 += x[6]
			a7 += x[7]
		}
		o := out[d : d+8 : d+8]
		o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7] = a0, a1, a2, a3, a4, a5, a6, a7
	}
	for ; d < n; d++ {
		var a float32
		for _, r := range bag {
			a += data[r*stride+int64(d)]
		}
		out[d] = a
	}
}

// divide divides out by n. It divides rather than multiplying by 1/n: a
// reciprocal rounds once more, and every kernel must agree on the
// canonical result.
func divide(out []float32, n float32) {
	for d := range out {
		out[d] /= n
	}
}

// poolAVX2 is the gather-reduce of gather_amd64.s. The assembly sums the
// columns that fill whole 8-float vectors, prefetching the rows ahead
// lookups ahead (across bag boundaries; 0: no prefetch); the few columns
// left when Dim is not a multiple of 8 are summed here in the same order,
// while the bag's rows are still in cache.
func poolAVX2(v *tableView, reduce kernel.Reduce) { poolAVX2Ahead(v, reduce, prefetchAhead) }

func poolAVX2Ahead(v *tableView, reduce kernel.Reduce, ahead int64) {
	dim, stride := v.dim, v.stride
	cols := dim &^ 7
	lines := prefetchLines(v.data, dim, stride)
	end := v.off[len(v.off)-1]
	for b := range len(v.off) - 1 {
		lo, hi := v.off[b], v.off[b+1]
		out := v.pooled[b*dim : (b+1)*dim]
		var div float32
		if reduce == kernel.Mean && hi > lo {
			div = float32(hi - lo)
		}
		if cols > 0 {
			var bag, pf *int64
			npf := min(hi+ahead, end) - (lo + ahead)
			if hi > lo {
				bag = &v.idx[lo]
			}
			if npf > 0 && ahead > 0 {
				pf = &v.idx[lo+ahead]
			} else {
				npf = 0
			}
			poolBagAVX2(&out[0], unsafe.SliceData(v.data), bag, int(hi-lo), pf, int(npf), cols, 4*stride, lines, div)
		}
		if cols < dim {
			tail := out[cols:]
			sumRows(tail, v.data[cols:], v.idx[lo:hi], int64(stride))
			if div != 0 {
				divide(tail, div)
			}
		}
	}
}

// prefetchLines is how many cache lines the kernel prefetches per row: the
// lines of dim floats, plus one when rows do not start on a line boundary.
func prefetchLines(data []float32, dim, stride int) int {
	lines := (4*dim + 63) / 64
	if len(data) > 0 && (uintptr(unsafe.Pointer(&data[0]))%64 != 0 || (4*stride)%64 != 0 || (4*dim)%64 != 0) {
		lines++
	}
	return lines
}
