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

// AddScaled adds alpha·x to y element by element (len(x) ≤ len(y)), each
// product rounded to float32 before its add (no fused multiply-add): the
// dot interaction's gradient, y[k] += float32(alpha*x[k]).
func AddScaled(y []float32, alpha float32, x []float32) {
	y = y[:len(x)]
	n := asmPrefix(len(x))
	if n > 0 {
		addScaledAVX(&y[0], &x[0], alpha, n)
	}
	for i := n; i < len(x); i++ {
		y[i] += float32(alpha * x[i])
	}
}

// Dots4x8 writes out[r*8+l] (r < 4, l < 8), the dot product of v's row r
// (v is 4 rows of d floats) with vt's column l (vt is d rows of 8): the
// sum over k in ascending order, from +0, of each product rounded to
// float32, no fused multiply-add, as the scalar loop
// `acc += float32(v[r*d+k] * vt[k*8+l])` computes it. The 32 sums are
// independent lanes, so the AVX2 loop gives the scalar loop's bits; with
// vt a block of vectors laid out side by side it is a block of a dot
// interaction's Gram matrix.
func Dots4x8(out, v, vt []float32, d int) {
	out, v, vt = out[:32], v[:4*d], vt[:8*d]
	if useAsm && d > 0 {
		dots4x8AVX(&v[0], &vt[0], d, &out[0])
		return
	}
	for r := range 4 {
		for l := range 8 {
			var acc float32
			for k := range d {
				acc += float32(v[r*d+k] * vt[k*8+l])
			}
			out[r*8+l] = acc
		}
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
