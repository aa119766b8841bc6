package gemm

// The element-wise passes a fully connected layer makes around its
// products. Each is exact (an add or a select per element, no rounding
// choice), so the vector forms give the scalar loops' bits.

// AddTo adds src to dst element by element (len(src) ≤ len(dst)): a layer's
// bias gradient is AddTo of every sample's output gradient, in sample order.
func AddTo(dst, src []float32) {
	dst = dst[:len(src)]
	n := asmPrefix(len(src))
	if n > 0 {
		addToAVX(&dst[0], &src[0], n)
	}
	for i := n; i < len(src); i++ {
		dst[i] += src[i]
	}
}

// ReLU sets every x[i] < 0 to +0, leaving NaN and -0 as they are.
func ReLU(x []float32) {
	n := asmPrefix(len(x))
	if n > 0 {
		reluAVX(&x[0], n)
	}
	for i := n; i < len(x); i++ {
		if x[i] < 0 {
			x[i] = 0
		}
	}
}

// ReLUGrad sets dy[i] to +0 wherever !(y[i] > 0) (ReLU's derivative taken
// as 0 at 0, as PyTorch does), len(y) ≥ len(dy).
func ReLUGrad(dy, y []float32) {
	y = y[:len(dy)]
	n := asmPrefix(len(dy))
	if n > 0 {
		reluGradAVX(&dy[0], &y[0], n)
	}
	for i := n; i < len(dy); i++ {
		if !(y[i] > 0) {
			dy[i] = 0
		}
	}
}

// asmPrefix is how many leading elements of an n-long pass the AVX2 loop
// takes: n rounded down to a multiple of 8, or 0 without the assembly.
func asmPrefix(n int) int {
	if !useAsm {
		return 0
	}
	return n &^ 7
}
