package dlrm

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// dotInteraction is DLRM's feature interaction. Per sample it takes T+1
// vectors of width d: v0, the bottom MLP's output, and v1..vT, the pooled
// embeddings of tables 0..T-1. Its output is v0 followed by the dot
// products of every pair (i, j) with i > j, the strictly lower triangle
// without the self-interactions, row by row: (1,0), (2,0), (2,1), (3,0), …
// — the order of DLRM reference's interact_features with
// arch_interaction_itself off.
//
// Samples are independent, so a large batch is split across up to threads
// goroutines (0: GOMAXPROCS) by blocks of samples; each sample's sums are
// the same whichever goroutine computes them.
type dotInteraction struct {
	tables, dim int
	threads     int
}

// sampleBlock samples are the unit the goroutines take from a counter.
const sampleBlock = 64

// Below parallelFLOPs a pass runs in the caller's goroutine (a variable so
// that tests can split small batches).
var parallelFLOPs int64 = 1 << 22

// goroutines is how many goroutines a pass of flops over B samples uses.
func (it dotInteraction) goroutines(B int, flops int64) int {
	threads := it.threads
	if threads == 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	if flops < parallelFLOPs {
		return 1
	}
	return max(1, min(threads, (B+sampleBlock-1)/sampleBlock))
}

// eachBlock calls fn(g, s0, s1) over the batch's samples in blocks, g the
// goroutine (0..w-1): w goroutines take blocks from a counter, so one
// slowed by other work takes fewer.
func eachBlock(B, w int, fn func(g, s0, s1 int)) {
	if w <= 1 {
		fn(0, 0, B)
		return
	}
	var next atomic.Int64
	work := func(g int) {
		for s0 := int(next.Add(sampleBlock) - sampleBlock); s0 < B; s0 = int(next.Add(sampleBlock) - sampleBlock) {
			fn(g, s0, min(B, s0+sampleBlock))
		}
	}
	var wg sync.WaitGroup
	for g := 1; g < w; g++ {
		wg.Go(func() { work(g) })
	}
	work(0)
	wg.Wait()
}

// pairs is the number of dot products, (T+1)·T/2.
func (it dotInteraction) pairs() int { return (it.tables + 1) * it.tables / 2 }

// width is the interaction's output width, the top MLP's input.
func (it dotInteraction) width() int { return it.dim + it.pairs() }

// vec returns sample s's vector i: the bottom output x [B][d] for i = 0,
// table i-1's pooled embedding from pooled [T][B][d] otherwise.
func (it dotInteraction) vec(B, s, i int, x, pooled []float32) []float32 {
	d := it.dim
	if i == 0 {
		return x[s*d : (s+1)*d]
	}
	at := ((i-1)*B + s) * d
	return pooled[at : at+d]
}

// dot sums in index order, each product rounded to float32 (no FMA).
func dot(a, b []float32) float32 {
	var acc float32
	for k, v := range a {
		acc += float32(v * b[k])
	}
	return acc
}

// axpy adds alpha·x to y in index order, each product rounded to float32.
func axpy(alpha float32, x, y []float32) {
	for k, v := range x {
		y[k] += float32(alpha * v)
	}
}

// forward writes r [B][width].
func (it dotInteraction) forward(B int, x, pooled, r []float32) {
	eachBlock(B, it.goroutines(B, it.forwardFLOPs(B)), func(_, s0, s1 int) {
		it.forwardSamples(B, s0, s1, x, pooled, r)
	})
}

// forwardSamples is forward for samples s0..s1-1.
func (it dotInteraction) forwardSamples(B, s0, s1 int, x, pooled, r []float32) {
	d, w := it.dim, it.width()
	for s := s0; s < s1; s++ {
		row := r[s*w : (s+1)*w]
		copy(row[:d], x[s*d:(s+1)*d])
		k := d
		for i := 1; i <= it.tables; i++ {
			vi := it.vec(B, s, i, x, pooled)
			for j := range i {
				row[k] = dot(vi, it.vec(B, s, j, x, pooled))
				k++
			}
		}
	}
}

func (it dotInteraction) forwardFLOPs(B int) int64 {
	return int64(B) * int64(it.pairs()) * 2 * int64(it.dim)
}

// backward takes dr [B][width], the gradient at the interaction's output,
// and writes dx [B][d] (into the bottom MLP) and pooledGrad [T][B][d].
// Per sample the vectors' gradients are summed in scratch ((T+1)·d floats)
// in the forward's pair order, the direct path of v0 first, and only then
// written out: a sample's pooled inputs are all read before its gradients
// are written, so the result is right even when pooledGrad and pooled are
// the same memory. Each goroutine has its own (T+1)·d floats of scratch,
// so scratch bounds their number (scratchFloats).
func (it dotInteraction) backward(B int, x, pooled, dr, dx, pooledGrad, scratch []float32) {
	per := (it.tables + 1) * it.dim
	w := min(it.goroutines(B, it.backwardFLOPs(B)), len(scratch)/per)
	eachBlock(B, w, func(g, s0, s1 int) {
		it.backwardSamples(B, s0, s1, x, pooled, dr, dx, pooledGrad, scratch[g*per:(g+1)*per])
	})
}

// scratchFloats is the scratch backward uses: (T+1)·d floats for each
// goroutine it may run.
func (it dotInteraction) scratchFloats() int {
	threads := it.threads
	if threads == 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	return max(1, threads) * (it.tables + 1) * it.dim
}

// backwardSamples is backward for samples s0..s1-1, dv its scratch.
func (it dotInteraction) backwardSamples(B, s0, s1 int, x, pooled, dr, dx, pooledGrad, dv []float32) {
	d, w, T := it.dim, it.width(), it.tables
	for s := s0; s < s1; s++ {
		row := dr[s*w : (s+1)*w]
		clear(dv)
		copy(dv[:d], row[:d])
		k := d
		for i := 1; i <= T; i++ {
			vi := it.vec(B, s, i, x, pooled)
			for j := range i {
				g := row[k]
				k++
				axpy(g, it.vec(B, s, j, x, pooled), dv[i*d:(i+1)*d])
				axpy(g, vi, dv[j*d:(j+1)*d])
			}
		}
		copy(dx[s*d:(s+1)*d], dv[:d])
		for t := range T {
			at := (t*B + s) * d
			copy(pooledGrad[at:at+d], dv[(t+1)*d:(t+2)*d])
		}
	}
}

func (it dotInteraction) backwardFLOPs(B int) int64 {
	return int64(B) * int64(it.pairs()) * 4 * int64(it.dim)
}
