package cpu

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/flowrun/flowrun/sdk/kernel"
)

// The per-table loops on `flowrun bench kernel`'s default sizes (one table
// of 2²⁰ rows × 128 floats, 2048 bags of 20 uniform lookups), in process
// memory, each phase of Scatter on its own. MB/s is useful row bytes
// (lookups × dim × 4) per second, as the bench command's gbps:
//
//	go test -run '^$' -bench . ./plugins/kernels/cpu/

const (
	benchRows    = 1 << 20
	benchDim     = 128
	benchBatch   = 2048
	benchLookups = 20
)

var benchTable = sync.OnceValue(func() []float32 {
	// Room for Adagrad's state; the gather reads the first dim floats of
	// each 2·dim stride.
	data := make([]float32, benchRows*2*benchDim)
	for i := range data {
		data[i] = float32(i%1000) / 1000
	}
	return data
})

func benchView(stride int) *tableView {
	rng := rand.New(rand.NewPCG(1, 2))
	v := &tableView{data: benchTable()[:benchRows*stride], dim: benchDim, stride: stride, off: make([]int64, benchBatch+1)}
	v.idx = make([]int64, benchBatch*benchLookups)
	for i := range v.idx {
		v.idx[i] = rng.Int64N(benchRows)
	}
	for b := range v.off {
		v.off[b] = int64(b * benchLookups)
	}
	v.pooled = make([]float32, benchBatch*benchDim)
	for i := range v.pooled {
		v.pooled[i] = rng.Float32() * 1e-3
	}
	return v
}

// impl is one set of the kernel's loops.
type impl struct {
	pool     pooler
	coalesce bagPooler
	avx2     bool
}

// impls are the loops this CPU can run, by the impl option's name.
func impls() map[string]impl {
	m := map[string]impl{ImplGo: {poolGo, coalesceGo, false}}
	if haveAVX2 {
		m[ImplAVX2] = impl{poolAVX2, coalesceAVX2, true}
	}
	return m
}

func BenchmarkGatherReduce(b *testing.B) {
	v := benchView(benchDim)
	for name, im := range impls() {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(benchBatch * benchLookups * benchDim * 4)
			for b.Loop() {
				im.pool(v, kernel.Sum)
			}
		})
	}
}

// BenchmarkExpand is expand-coalesce's expand and radix sort.
func BenchmarkExpand(b *testing.B) {
	v := benchView(benchDim)
	s := new(scratch)
	b.SetBytes(benchBatch * benchLookups * benchDim * 4)
	for b.Loop() {
		expand(v, kernel.Sum, s)
	}
}

// BenchmarkCoalesce sums the sorted lookups' gradients into a chunk that
// stays in cache (as Scatter does) or into a batch-sized output (as
// ExpandCoalesce does).
func BenchmarkCoalesce(b *testing.B) {
	v := benchView(benchDim)
	e, _ := expand(v, kernel.Sum, new(scratch))
	out := make([]float32, len(e.rows)*benchDim)
	for name, im := range impls() {
		b.Run(name+"/chunked", func(b *testing.B) {
			b.SetBytes(benchBatch * benchLookups * benchDim * 4)
			for b.Loop() {
				for u0 := 0; u0 < len(e.rows); u0 += scatterChunk {
					e.coalesce(im.coalesce, u0, min(u0+scatterChunk, len(e.rows)), out[:scatterChunk*benchDim])
				}
			}
		})
		b.Run(name+"/materialized", func(b *testing.B) {
			b.SetBytes(benchBatch * benchLookups * benchDim * 4)
			for b.Loop() {
				e.coalesce(im.coalesce, 0, len(e.rows), out)
			}
		})
	}
}

// BenchmarkApply is the optimizer step of the unique rows, at random
// places in the table.
func BenchmarkApply(b *testing.B) {
	for _, opt := range []kernel.Optimizer{kernel.SGD, kernel.Adagrad, kernel.RowWiseAdagrad} {
		v := benchView(benchDim + kernel.StateFloats(opt, benchDim))
		e, _ := expand(v, kernel.Sum, new(scratch))
		grads := make([]float32, len(e.rows)*benchDim)
		for i := range grads {
			grads[i] = 1e-6
		}
		for name, im := range impls() {
			b.Run(opt.String()+"/"+name, func(b *testing.B) {
				u := update{opt: opt, lr: 1e-3, eps: 1e-8, avx2: im.avx2}
				b.SetBytes(benchBatch * benchLookups * benchDim * 4)
				for b.Loop() {
					u.apply(v.data, v.dim, v.stride, e.rows, len(e.rows), grads)
				}
			})
		}
	}
}

// BenchmarkScatter is the fused expand-coalesce and update of one table.
func BenchmarkScatterTable(b *testing.B) {
	for _, opt := range []kernel.Optimizer{kernel.SGD, kernel.RowWiseAdagrad} {
		v := benchView(benchDim + kernel.StateFloats(opt, benchDim))
		s := new(scratch)
		for name, im := range impls() {
			b.Run(opt.String()+"/"+name, func(b *testing.B) {
				u := update{opt: opt, lr: 1e-3, eps: 1e-8, avx2: im.avx2}
				b.SetBytes(benchBatch * benchLookups * benchDim * 4)
				for b.Loop() {
					expandCoalesceApply(v, kernel.Sum, im.coalesce, u, s)
				}
			})
		}
	}
}
