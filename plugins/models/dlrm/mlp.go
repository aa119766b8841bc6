package dlrm

import (
	"math"

	"github.com/flowrun/flowrun/sdk/model/gemm"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// layer is one fully connected layer, y = x·Wᵀ + b, with a ReLU after it
// unless it is the top MLP's last (the logit). W is [out][in] row-major,
// PyTorch's nn.Linear layout, which is also the digest's order.
//
// The matrix products go through sdk/model/gemm: every element of a
// product is one chain of fused multiply-adds over k in ascending order,
// and the work is split across goroutines only by rows or columns of the
// output, so a step's result depends on the inputs alone, never on
// GOMAXPROCS, scheduling or the machine (the pure-Go fallback computes the
// same bits as the AVX2/FMA kernel).
type layer struct {
	in, out int
	relu    bool
	w, b    []float32
	// gw, gb are the gradients of the last backward pass.
	gw, gb []float32
	// accW, accB are Adagrad's G (sum of squared gradients); nil for SGD.
	accW, accB []float32
	// threads caps each product's goroutines (0: GOMAXPROCS).
	threads int
}

func newLayer(in, out int, relu, adagrad bool, threads int) *layer {
	l := &layer{
		in: in, out: out, relu: relu, threads: threads,
		w: make([]float32, out*in), b: make([]float32, out),
		gw: make([]float32, out*in), gb: make([]float32, out),
	}
	if adagrad {
		l.accW, l.accB = make([]float32, out*in), make([]float32, out)
	}
	return l
}

// forward writes y [B][out] = act(x [B][in] · Wᵀ + b). Every element's
// chain of fused multiply-adds starts from its bias, so b comes first in
// every sum; gemm.SgemmBias loads b into the kernel's accumulators and
// applies the ReLU as it stores them, with the bits of copying b into each
// row, accumulating the product and a ReLU pass.
func (l *layer) forward(B int, x, y []float32) {
	gemm.SgemmBias(l.goroutines(), false, true, B, l.out, l.in, x, l.in, l.w, l.in, l.b, l.relu, y[:B*l.out], l.out)
}

// forwardFLOPs counts the product (a multiply and an add per term), the
// bias and the ReLU.
func (l *layer) forwardFLOPs(B int) int64 {
	f := 2*int64(B)*int64(l.in)*int64(l.out) + int64(B)*int64(l.out)
	if l.relu {
		f += int64(B) * int64(l.out)
	}
	return f
}

// backward takes dy [B][out], the gradient at the layer's output (after
// its ReLU), and the layer's forward output y and input x. It masks dy by
// the ReLU in place, writes gw = dyᵀ·x and gb = Σ_samples dy (in sample
// order), and, when dx is not nil, dx [B][in] = dy·W.
func (l *layer) backward(B int, x, y, dy, dx []float32) {
	dy = dy[:B*l.out]
	if l.relu {
		// ReLU's derivative is taken as 0 at 0, as PyTorch does.
		gemm.ReLUGrad(dy, y)
	}
	l.sgemm(true, false, l.out, l.in, B, dy, l.out, x, l.in, false, l.gw, l.in)
	clear(l.gb)
	for s := range B {
		gemm.AddTo(l.gb, dy[s*l.out:(s+1)*l.out])
	}
	if dx != nil {
		l.sgemm(false, false, B, l.in, l.out, dy, l.out, l.w, l.in, false, dx, l.in)
	}
}

func (l *layer) backwardFLOPs(B int, withDX bool) int64 {
	mac := 2 * int64(B) * int64(l.in) * int64(l.out)
	f := mac + int64(B)*int64(l.out) // gw, gb
	if l.relu {
		f += int64(B) * int64(l.out)
	}
	if withDX {
		f += mac
	}
	return f
}

// sgemm runs one product on the layer's goroutine budget.
func (l *layer) sgemm(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, acc bool, c []float32, ldc int) {
	gemm.SgemmThreads(l.goroutines(), transA, transB, m, n, k, a, lda, b, ldb, acc, c, ldc)
}

// goroutines is the layer's goroutine budget: threads, or the CPUs
// available (plugin.Parallelism).
func (l *layer) goroutines() int {
	if l.threads == 0 {
		return plugin.Parallelism()
	}
	return l.threads
}

// params is the number of parameters (weights and biases).
func (l *layer) params() int64 { return int64(l.out)*int64(l.in) + int64(l.out) }

// sgd applies w -= lr·g, rounding the product to float32 so that it cannot
// be fused into an FMA on machines that have one.
func sgd(w, g []float32, lr float32) {
	for i, gi := range g {
		w[i] -= float32(lr * gi)
	}
}

// adagrad applies G += g²; w -= lr·g/(sqrt(G)+ε), each operation rounded
// to float32 in that order, as sdk/kernel's sparse Adagrad does for rows.
func adagrad(w, acc, g []float32, lr, eps float32) {
	for i, gi := range g {
		acc[i] += float32(gi * gi)
		w[i] -= float32(lr*gi) / (float32(math.Sqrt(float64(acc[i]))) + eps)
	}
}

// Update FLOPs per parameter: SGD multiplies and subtracts; Adagrad
// squares, adds, takes a square root, adds ε, multiplies, divides and
// subtracts.
const (
	sgdFLOPs     = 2
	adagradFLOPs = 7
)

func (l *layer) update(lr, eps float32) {
	if l.accW == nil {
		sgd(l.w, l.gw, lr)
		sgd(l.b, l.gb, lr)
		return
	}
	adagrad(l.w, l.accW, l.gw, lr, eps)
	adagrad(l.b, l.accB, l.gb, lr, eps)
}
