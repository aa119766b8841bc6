package ncf

import (
	"math"

	"github.com/flowrun/flowrun/sdk/model/modelmath"
)

// layer is a fully connected layer y = W·x + b, ReLU'd or not, with the
// gradients of its last backward pass.
type layer struct {
	in, out int
	relu    bool
	w, b    []float32 // w is [out][in]
	gw, gb  []float32
}

// newLayer draws W uniformly from [-1/√in, 1/√in) (b = 0) from
// modelmath.Uniform's stream, continuing at *next, so that every
// parameter of the model has its own index.
func newLayer(in, out int, relu bool, seed uint64, next *uint64) *layer {
	l := &layer{in: in, out: out, relu: relu, w: make([]float32, out*in), b: make([]float32, out),
		gw: make([]float32, out*in), gb: make([]float32, out)}
	scale := 1 / math.Sqrt(float64(in))
	for i := range l.w {
		u := modelmath.Uniform(seed^seedDomain, *next)
		*next++
		l.w[i] = float32((2*u - 1) * scale)
	}
	return l
}

// forward is the layer's output [B][out] for x [B][in].
func (l *layer) forward(B int, x []float32) []float32 {
	y := make([]float32, B*l.out)
	for i := range B {
		xi := x[i*l.in : (i+1)*l.in]
		for o := range l.out {
			z := l.b[o]
			for k, w := range l.w[o*l.in : (o+1)*l.in] {
				z += float32(w * xi[k])
			}
			if l.relu && z < 0 {
				z = 0
			}
			y[i*l.out+o] = z
		}
	}
	return y
}

// backward takes g = dL/dy [B][out] (y the layer's output for x) to
// dL/dx [B][in], setting gw and gb; g is not changed.
func (l *layer) backward(B int, x, y, g []float32) []float32 {
	clear(l.gw)
	clear(l.gb)
	dx := make([]float32, B*l.in)
	for i := range B {
		xi, dxi := x[i*l.in:(i+1)*l.in], dx[i*l.in:(i+1)*l.in]
		for o := range l.out {
			d := g[i*l.out+o]
			if l.relu && y[i*l.out+o] <= 0 {
				continue
			}
			l.gb[o] += d
			w, gw := l.w[o*l.in:(o+1)*l.in], l.gw[o*l.in:(o+1)*l.in]
			for k := range l.in {
				gw[k] += float32(d * xi[k])
				dxi[k] += float32(d * w[k])
			}
		}
	}
	return dx
}

// update is one SGD step.
func (l *layer) update(lr float32) {
	for i, g := range l.gw {
		l.w[i] -= float32(lr * g)
	}
	for i, g := range l.gb {
		l.b[i] -= float32(lr * g)
	}
}

func (l *layer) params() int64 { return int64(l.in*l.out + l.out) }

func (l *layer) forwardFLOPs(B int64) int64 {
	f := 2*B*int64(l.in)*int64(l.out) + B*int64(l.out)
	if l.relu {
		f += B * int64(l.out)
	}
	return f
}

// backwardFLOPs: the weight and input gradients (a multiply and an add
// each per weight and sample), the bias gradient and the ReLU mask.
func (l *layer) backwardFLOPs(B int64) int64 {
	f := 4*B*int64(l.in)*int64(l.out) + B*int64(l.out)
	if l.relu {
		f += B * int64(l.out)
	}
	return f
}
