package dlrm

import (
	"sync"
	"sync/atomic"

	"github.com/flowrun/flowrun/sdk/model/gemm"
	"github.com/flowrun/flowrun/sdk/plugin"
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
		threads = plugin.Parallelism()
	}
	if flops < parallelFLOPs {
		return 1
	}
	return max(1, min(threads, (B+sampleBlock-1)/sampleBlock))
}

// eachBlock calls fn(g, s0, s1) over the batch's samples in blocks, g the
// goroutine (0..w-1): w goroutines take blocks from a counter, so one
// slowed by other work takes fewer. Only w > 1 reaches it: fn escapes to
// the goroutines, so the callers run the one-goroutine case directly and
// allocate nothing.
func eachBlock(B, w int, fn func(g, s0, s1 int)) {
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

// axpy adds alpha·x to y, each product rounded to float32 (no FMA); the
// elements are independent, so gemm.AddScaled's AVX2 loop gives the
// scalar loop's bits.
func axpy(alpha float32, x, y []float32) {
	gemm.AddScaled(y, alpha, x)
}

// forward writes r [B][width]. scratch is backward's (scratchFloats).
func (it dotInteraction) forward(B int, x, pooled, r, scratch []float32) {
	per := it.scratchPer()
	w := min(it.goroutines(B, it.forwardFLOPs(B)), len(scratch)/per)
	if w <= 1 {
		it.forwardSamples(B, 0, B, x, pooled, r, scratch[:per])
		return
	}
	eachBlock(B, w, func(g, s0, s1 int) {
		it.forwardSamples(B, s0, s1, x, pooled, r, scratch[g*per:(g+1)*per])
	})
}

// forwardSamples is forward for samples s0..s1-1. Per sample the T+1
// vectors are copied side by side into scratch (three zero rows after
// them) and, for each block of 8 vectors j, transposed into vt, so that
// gemm.Dots4x8 computes the dots of 4 vectors i with 8 vectors j at once:
// each dot the sum over k in order of products rounded to float32, the
// scalar dot's bits. The lanes with j ≥ i (the upper triangle) are
// computed and dropped.
func (it dotInteraction) forwardSamples(B, s0, s1 int, x, pooled, r, scratch []float32) {
	d, w, T := it.dim, it.width(), it.tables
	vs := scratch[:(T+4)*d]
	vt := scratch[(T+4)*d : (T+12)*d]
	out := scratch[(T+12)*d : (T+12)*d+32]
	clear(vs[(T+1)*d:])
	for s := s0; s < s1; s++ {
		row := r[s*w : (s+1)*w]
		copy(row[:d], x[s*d:(s+1)*d])
		for i := range T + 1 {
			copy(vs[i*d:(i+1)*d], it.vec(B, s, i, x, pooled))
		}
		for jb := 0; jb < T; jb += 8 {
			for l := range 8 {
				j := jb + l
				if j > T {
					for k := range d {
						vt[k*8+l] = 0
					}
					continue
				}
				for k, v := range vs[j*d : (j+1)*d] {
					vt[k*8+l] = v
				}
			}
			for i0 := jb + 1; i0 <= T; i0 += 4 {
				gemm.Dots4x8(out, vs[i0*d:(i0+4)*d], vt, d)
				for ri := range min(4, T+1-i0) {
					i := i0 + ri
					for l := range min(8, i-jb) {
						row[d+i*(i-1)/2+jb+l] = out[ri*8+l]
					}
				}
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
	per := it.scratchPer()
	w := min(it.goroutines(B, it.backwardFLOPs(B)), len(scratch)/per)
	if w <= 1 {
		it.backwardSamples(B, 0, B, x, pooled, dr, dx, pooledGrad, scratch[:(it.tables+1)*it.dim])
		return
	}
	eachBlock(B, w, func(g, s0, s1 int) {
		it.backwardSamples(B, s0, s1, x, pooled, dr, dx, pooledGrad, scratch[g*per:g*per+(it.tables+1)*it.dim])
	})
}

// scratchFloats is the scratch forward and backward use: scratchPer
// floats for each goroutine they may run.
func (it dotInteraction) scratchFloats() int {
	threads := it.threads
	if threads == 0 {
		threads = plugin.Parallelism()
	}
	return max(1, threads) * it.scratchPer()
}

// scratchPer is one goroutine's scratch: forward's T+4 vectors side by
// side, 8 transposed and a 4×8 block of dots; backward's first (T+1)·d
// floats are its vectors' gradients.
func (it dotInteraction) scratchPer() int {
	return (it.tables+12)*it.dim + 32
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
