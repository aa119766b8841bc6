package cpu

import (
	"math"

	"github.com/flowrun/flowrun/sdk/kernel"
)

// update is one optimizer step for the coalesced rows of a table: row
// rows[i] (at data[rows[i]*stride:]) receives gradient grads[i*dim:]. The
// optimizer's state lives in floats [dim, stride) of each row.
type update struct {
	opt     kernel.Optimizer
	lr, eps float32
}

// apply updates every row once, in the given order. Every operation is
// rounded to float32 as the sdk's Optimizer documents (explicit
// conversions forbid FMA fusion, which Go may do on arm64 and with
// GOAMD64=v3 and which would change the digest between machines).
func (u update) apply(data []float32, dim, stride int, rows []int64, grads []float32) kernel.Result {
	var res kernel.Result
	n := int64(len(rows))
	st := int64(stride)
	switch u.opt {
	case kernel.SGD:
		for i, r := range rows {
			w := data[int64(r)*st:][:dim]
			g := grads[i*dim:][:dim]
			for d := range w {
				w[d] -= float32(u.lr * g[d])
			}
		}
		res.FLOPs = 2 * n * int64(dim)
		res.BytesWritten = n * 4 * int64(dim)
	case kernel.Adagrad:
		for i, r := range rows {
			w := data[int64(r)*st:][:2*dim]
			w, G := w[:dim], w[dim:]
			g := grads[i*dim:][:dim]
			for d := range w {
				G[d] += float32(g[d] * g[d])
				den := float32(math.Sqrt(float64(G[d]))) + u.eps
				w[d] -= float32(u.lr*g[d]) / den
			}
		}
		res.FLOPs = 7 * n * int64(dim)
		res.BytesWritten = n * 8 * int64(dim)
	case kernel.RowWiseAdagrad:
		for i, r := range rows {
			w := data[int64(r)*st:][:dim+1]
			w, G := w[:dim], &w[dim]
			g := grads[i*dim:][:dim]
			var sq float32
			for _, x := range g {
				sq += float32(x * x)
			}
			*G += sq / float32(dim)
			den := float32(math.Sqrt(float64(*G))) + u.eps
			for d := range w {
				w[d] -= float32(u.lr*g[d]) / den
			}
		}
		res.FLOPs = n * (5*int64(dim) + 4)
		res.BytesWritten = n * 4 * (int64(dim) + 1)
	}
	state := int64(kernel.StateFloats(u.opt, dim))
	res.BytesRead = n * (8 + 4*int64(dim) + 4*(int64(dim)+state)) // row id, gradient, row and state
	return res
}
