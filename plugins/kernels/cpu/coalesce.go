package cpu

import (
	"math/bits"
	"slices"
	"sync"
	"unsafe"

	"github.com/flowrun/flowrun/sdk/kernel"
)

// scratch is one table's working memory for expand-coalesce, reused across
// calls so that a batch allocates nothing.
type scratch struct {
	keys, tmp []uint64  // expanded lookups: row<<32 | bag
	bags      []int64   // the bag of each sorted lookup
	scaled    []float32 // Mean: each bag's gradient over its length
	rows      []int64   // Scatter: coalesced rows
	grads     []float32 // Scatter: coalesced gradients
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// expandCoalesce is Tensor Casting's Alg. 1 for one table: expand each
// bag's gradient to the rows the bag pooled, sort the expanded lookups by
// row, and sum the gradients of equal rows. It writes the unique rows in
// ascending order to rows and their sums to grads ([unique][dim]) and
// returns how many there are.
//
// The order is canonical: a row's gradients are summed from +0 in position
// order (the lookups are sorted stably by row, and a bag's positions are
// contiguous and increasing), and under Mean each bag's gradient is divided
// by the bag length once, before it is expanded. The sum of a row's
// gradients is a gather-reduce over the gradient matrix whose "bag" is the
// row's lookups, so it runs on the same pooling kernel as GatherReduce.
func expandCoalesce(v *tableView, reduce kernel.Reduce, pool bagPooler, s *scratch, rows []int64, grads []float32) (int, kernel.Result) {
	dim := v.dim
	B := len(v.off) - 1
	var res kernel.Result
	res.BytesRead = int64(B)*int64(dim)*4 + (v.off[B]-v.off[0])*8 // gradients and indices

	// Expand: one key per lookup, in position order.
	n := int(v.off[B] - v.off[0])
	s.keys = grow(s.keys, n)
	keys := s.keys
	var maxRow int64
	for b := range B {
		for i, r := range v.idx[v.off[b]:v.off[b+1]] {
			keys[int(v.off[b]-v.off[0])+i] = uint64(r)<<32 | uint64(b)
			maxRow = max(maxRow, r)
		}
	}
	s.tmp = grow(s.tmp, n)
	keys = sortByRow(keys, s.tmp, maxRow)

	g := v.pooled
	if reduce == kernel.Mean {
		s.scaled = grow(s.scaled, len(g))
		for b := range B {
			src, dst := g[b*dim:(b+1)*dim], s.scaled[b*dim:(b+1)*dim]
			if k := v.off[b+1] - v.off[b]; k > 0 {
				copy(dst, src)
				divide(dst, float32(k))
				res.FLOPs += int64(dim)
			}
		}
		g = s.scaled
	}

	// Coalesce: each run of equal rows is one bag of the gradient matrix.
	s.bags = grow(s.bags, n)
	for i, k := range keys {
		s.bags[i] = int64(uint32(k))
	}
	unique := 0
	for i := 0; i < n; {
		r := keys[i] >> 32
		j := i + 1
		for j < n && keys[j]>>32 == r {
			j++
		}
		rows[unique] = int64(r)
		pool(grads[unique*dim:(unique+1)*dim], g, s.bags, i, j, dim)
		unique++
		i = j
	}
	res.FLOPs += int64(n) * int64(dim)
	res.BytesWritten = int64(unique) * (8 + 4*int64(dim))
	return unique, res
}

// sortByRow sorts keys (row<<32 | bag, in position order) stably by row: an
// LSD radix sort over the row bits in 11-bit digits, so that 2²² rows take
// two passes. Small inputs use a comparison sort, which is as good since
// the keys are distinct up to equal (row, bag) pairs, whose order does not
// matter (they carry the same gradient). It returns the sorted slice, keys
// or tmp.
func sortByRow(keys, tmp []uint64, maxRow int64) []uint64 {
	if len(keys) < 512 {
		slices.Sort(keys)
		return keys
	}
	const digit = 11
	var count [1 << digit]int
	for shift := 32; shift < 32+bits.Len64(uint64(maxRow)); shift += digit {
		clear(count[:])
		for _, k := range keys {
			count[k>>shift&(1<<digit-1)]++
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, k := range keys {
			d := k >> shift & (1<<digit - 1)
			tmp[count[d]] = k
			count[d]++
		}
		keys, tmp = tmp, keys
	}
	return keys
}

// bagPooler sums rows bags[i:j] of g (dim floats each, packed) into out.
type bagPooler func(out, g []float32, bags []int64, i, j, dim int)

func coalesceGo(out, g []float32, bags []int64, i, j, dim int) {
	sumRows(out, g, bags[i:j], int64(dim))
}

func coalesceAVX2(out, g []float32, bags []int64, i, j, dim int) {
	cols := dim &^ 7
	if cols > 0 {
		// Gradients are read from cache; prefetching the next rows' ones
		// still helps when the gradient matrix outgrows L2.
		var pf *int64
		npf := min(j+prefetchAhead, len(bags)) - (i + prefetchAhead)
		if npf > 0 {
			pf = &bags[i+prefetchAhead]
		} else {
			npf = 0
		}
		poolBagAVX2(&out[0], unsafe.SliceData(g), &bags[i], j-i, pf, npf, cols, 4*dim, (4*dim+63)/64+1, 0)
	}
	if cols < dim {
		sumRows(out[cols:], g[cols:], bags[i:j], int64(dim))
	}
}
