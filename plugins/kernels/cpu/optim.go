package cpu

import (
	"math"
	"unsafe"

	"github.com/flowrun/flowrun/sdk/kernel"
)

// update is one optimizer step for the coalesced rows of a table: row
// rows[i] (at data[rows[i]*stride:]) receives gradient grads[i*dim:]. The
// optimizer's state lives in floats [dim, stride) of each row.
type update struct {
	opt     kernel.Optimizer
	lr, eps float32
	// avx2 runs rows whose dim is a multiple of 8 through optim_amd64.s,
	// which prefetches rows ahead (the update is bound by fetching rows at
	// random); it gives the same bits as applyGo.
	avx2 bool
}

// apply updates rows[:n] once each, in order, and counts the work; the
// rows after n are the next call's, which the AVX2 loop starts to
// prefetch.
func (u update) apply(data []float32, dim, stride int, rows []int64, n int, grads []float32) kernel.Result {
	if n == 0 {
		return kernel.Result{}
	}
	state := kernel.StateFloats(u.opt, dim)
	if u.avx2 && dim%8 == 0 {
		lines := prefetchLines(data, dim+state, stride)
		applyAVX2(int(u.opt), unsafe.SliceData(data), &rows[0], n, len(rows), &grads[0], dim, 4*stride, lines, u.lr, u.eps)
	} else {
		u.applyGo(data, dim, stride, rows[:n], grads)
	}
	d, s := int64(dim), int64(state)
	m := int64(n)
	res := kernel.Result{
		BytesRead:    m * (8 + 4*d + 4*(d+s)), // row id, gradient, row and state
		BytesWritten: m * 4 * (d + s),
	}
	switch u.opt {
	case kernel.SGD:
		res.FLOPs = 2 * m * d
	case kernel.Adagrad:
		res.FLOPs = 7 * m * d
	case kernel.RowWiseAdagrad:
		res.FLOPs = m * (5*d + 4)
	}
	return res
}

// applyGo is the portable update. Every operation is rounded to float32 as
// the sdk's Optimizer documents (explicit conversions forbid FMA fusion,
// which Go may do on arm64 and with GOAMD64=v3 and which would change the
// digest between machines).
func (u update) applyGo(data []float32, dim, stride int, rows []int64, grads []float32) {
	st := int64(stride)
	switch u.opt {
	case kernel.SGD:
		for i, r := range rows {
			w := data[r*st:][:dim]
			g := grads[i*dim:][:dim]
			for d := range w {
				w[d] -= float32(u.lr * g[d])
			}
		}
	case kernel.Adagrad:
		for i, r := range rows {
			w := data[r*st:][:2*dim]
			w, G := w[:dim], w[dim:]
			g := grads[i*dim:][:dim]
			for d := range w {
				G[d] += float32(g[d] * g[d])
				den := float32(math.Sqrt(float64(G[d]))) + u.eps
				w[d] -= float32(u.lr*g[d]) / den
			}
		}
	case kernel.RowWiseAdagrad:
		for i, r := range rows {
			w := data[r*st:][:dim+1]
			w, G := w[:dim], &w[dim]
			g := grads[i*dim:][:dim]
			*G += sumSquares(g) / float32(dim)
			den := float32(math.Sqrt(float64(*G))) + u.eps
			for d := range w {
				w[d] -= float32(u.lr*g[d]) / den
			}
		}
	}
}

// sumSquares is Σ g[d]² in row-wise Adagrad's canonical order: eight
// partial sums, element d into partial d mod 8 in increasing d, then
// ((p0+p4)+(p2+p6)) + ((p1+p5)+(p3+p7)), the order of a horizontal add of
// one 8-lane vector.
func sumSquares(g []float32) float32 {
	var p [8]float32
	d := 0
	for ; d+8 <= len(g); d += 8 {
		x := g[d : d+8 : d+8]
		p[0] += float32(x[0] * x[0])
		p[1] += float32(x[1] * x[1])
		p[2] += float32(x[2] * x[2])
		p[3] += float32(x[3] * x[3])
		p[4] += float32(x[4] * x[4])
		p[5] += float32(x[5] * x[5])
		p[6] += float32(x[6] * x[6])
		p[7] += float32(x[7] * x[7])
	}
	for l := 0; d < len(g); d, l = d+1, l+1 {
		p[l] += float32(g[d] * g[d])
	}
	return ((p[0] + p[4]) + (p[2] + p[6])) + ((p[1] + p[5]) + (p[3] + p[7]))
}
