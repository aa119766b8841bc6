package cpu

import (
	"sync"
	"unsafe"

	"github.com/flowrun/flowrun/sdk/kernel"
)

// scratch is one table's working memory for expand-coalesce, reused across
// calls so that a batch allocates nothing.
type scratch struct {
	keys, tmp []uint64  // expanded lookups: row<<32 | bag
	bags      []int64   // the bag of each sorted lookup
	runs      []int     // where each unique row's lookups start in bags
	rows      []int64   // the unique rows
	scaled    []float32 // Mean: each bag's gradient over its length
	chunk     []float32 // Scatter: coalesced gradients of a few rows
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// expanded is a table's lookups after Tensor Casting's expand step and the
// sort by row: rows[u]'s lookups carry the gradients of bags
// bags[runs[u]:runs[u+1]], rows of g.
type expanded struct {
	rows []int64
	runs []int
	bags []int64
	g    []float32
	dim  int
}

// expand expands each bag's gradient to the rows the bag pooled and sorts
// the lookups by row, keeping position order among equal rows (a bag's
// positions are contiguous and increasing, so (row, bag) order is
// (row, position) order). Under Mean each bag's gradient is divided by the
// bag length once, here, before it is expanded.
func expand(v *tableView, reduce kernel.Reduce, s *scratch) (expanded, kernel.Result) {
	dim := v.dim
	B := len(v.off) - 1
	n := int(v.off[B] - v.off[0])
	var res kernel.Result
	res.BytesRead = int64(B)*int64(dim)*4 + int64(n)*8 // gradients and indices

	s.keys, s.tmp = grow(s.keys, n), grow(s.tmp, n)
	keys := s.keys
	var maxRow int64
	for b := range B {
		at := int(v.off[b] - v.off[0])
		for i, r := range v.idx[v.off[b]:v.off[b+1]] {
			keys[at+i] = uint64(r)<<32 | uint64(b)
			maxRow = max(maxRow, r)
		}
	}
	keys = kernel.SortByRow(keys, s.tmp, maxRow)

	e := expanded{g: v.pooled, dim: dim}
	if reduce == kernel.Mean {
		s.scaled = grow(s.scaled, len(v.pooled))
		for b := range B {
			if k := v.off[b+1] - v.off[b]; k > 0 {
				dst := s.scaled[b*dim : (b+1)*dim]
				copy(dst, v.pooled[b*dim:(b+1)*dim])
				divide(dst, float32(k))
				res.FLOPs += int64(dim)
			}
		}
		e.g = s.scaled
	}

	s.bags, s.rows, s.runs = grow(s.bags, n), s.rows[:0], s.runs[:0]
	for i, k := range keys {
		s.bags[i] = int64(uint32(k))
		if r := int64(k >> 32); i == 0 || r != s.rows[len(s.rows)-1] {
			s.rows = append(s.rows, r)
			s.runs = append(s.runs, i)
		}
	}
	s.runs = append(s.runs, n)
	e.rows, e.runs, e.bags = s.rows, s.runs, s.bags
	res.FLOPs += int64(n) * int64(dim)
	return e, res
}

// coalesce sums the gradients of unique rows [u0, u1) into out
// ([u1-u0][dim]), each from +0 in position order. A row's sum is a
// gather-reduce over the gradient matrix whose "bag" is the row's lookups,
// so it runs on the same pooling loop as GatherReduce.
func (e *expanded) coalesce(pool bagPooler, u0, u1 int, out []float32) {
	dim := e.dim
	for u := u0; u < u1; u++ {
		pool(out[(u-u0)*dim:(u-u0+1)*dim], e.g, e.bags, e.runs[u], e.runs[u+1], dim)
	}
}

// bagPooler sums rows bags[i:j] of g (dim floats each, packed) into out.
type bagPooler func(out, g []float32, bags []int64, i, j, dim int)

func coalesceGo(out, g []float32, bags []int64, i, j, dim int) {
	sumRows(out, g, bags[i:j], int64(dim))
}

func coalesceAVX2(out, g []float32, bags []int64, i, j, dim int) {
	cols := dim &^ 7
	if cols > 0 {
		// The gradient matrix is small (batch × dim) but not always in L1:
		// prefetch the next rows' gradients as GatherReduce does.
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

// scatterChunk is how many unique rows Scatter coalesces before it updates
// them: their gradients (64 KiB at dim 128) stay in L2 between the two
// steps, instead of a batch's worth going out to memory and back.
const scatterChunk = 128

// expandCoalesceApply is the fused Scatter of one table: expand, then for
// each chunk of unique rows, coalesce and update.
func expandCoalesceApply(v *tableView, reduce kernel.Reduce, pool bagPooler, u update, s *scratch) kernel.Result {
	e, res := expand(v, reduce, s)
	unique := len(e.rows)
	s.chunk = grow(s.chunk, scatterChunk*v.dim)
	var ap kernel.Result
	for u0 := 0; u0 < unique; u0 += scatterChunk {
		u1 := min(u0+scatterChunk, unique)
		e.coalesce(pool, u0, u1, s.chunk)
		r := u.apply(v.data, v.dim, v.stride, e.rows[u0:], u1-u0, s.chunk)
		ap.BytesRead += r.BytesRead
		ap.BytesWritten += r.BytesWritten
		ap.FLOPs += r.FLOPs
	}
	// The coalesced gradients never leave the cache: count the arrays and
	// the rows (with their state) only.
	state := int64(kernel.StateFloats(u.opt, v.dim))
	return kernel.Result{
		BytesRead:    res.BytesRead + int64(unique)*4*(int64(v.dim)+state),
		BytesWritten: ap.BytesWritten,
		FLOPs:        res.FLOPs + ap.FLOPs,
	}
}
