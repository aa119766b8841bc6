//go:build amd64 && !purego

package gemm

import "golang.org/x/sys/cpu"

// useAsm reports whether the AVX2/FMA kernel can run here (x/sys/cpu
// checks that the OS saves the YMM registers).
var useAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// kern6x16 is implemented in kernel_amd64.s.
//
//go:noescape
func kern6x16(k int, a, b, c *float32, ldc int, load bool)

// kern6x16s is implemented in kernel_amd64.s.
//
//go:noescape
func kern6x16s(k int, a *float32, rs, ks int, b *float32, bs int, c *float32, ldc int, cin *float32, ldin int, flags int)

// The element-wise passes of vec.go; n is a positive multiple of 8.
//
//go:noescape
func addToAVX(dst, src *float32, n int)

//go:noescape
func reluAVX(x *float32, n int)

//go:noescape
func addScaledAVX(y, x *float32, alpha float32, n int)

//go:noescape
func dots4x8AVX(v, vt *float32, d int, out *float32)

//go:noescape
func reluGradAVX(dy, y *float32, n int)

// kernel computes one mr×nr tile of C; see kernelGo for its contract.
func kernel(k int, a, b, c []float32, ldc int, load bool) {
	if !useAsm {
		kernelGo(k, a, b, c, ldc, load)
		return
	}
	// The bounds the assembly relies on.
	_ = a[k*mr-1]
	_ = b[k*nr-1]
	_ = c[(mr-1)*ldc+nr-1]
	kern6x16(k, &a[0], &b[0], &c[0], ldc, load)
}

// kernelS is kernel with the operands read in place: A's element (r, q)
// at a[r*rs+q*ks], B's 16 floats of step q at b[q*bs:]; the chains start
// from cin[r*ldin+j] (flags&loadC; ldin 0 repeats one bias row) and the
// store applies ReLU with flags&storeReLU. See kernelGoS.
func kernelS(k int, a []float32, rs, ks int, b []float32, bs int, c []float32, ldc int, cin []float32, ldin int, flags int) {
	if !useAsm {
		kernelGoS(k, a, rs, ks, b, bs, c, ldc, cin, ldin, flags)
		return
	}
	// The bounds the assembly relies on.
	_ = a[(mr-1)*rs+(k-1)*ks]
	_ = b[(k-1)*bs+nr-1]
	_ = c[(mr-1)*ldc+nr-1]
	in := &c[0]
	if flags&loadC != 0 {
		_ = cin[(mr-1)*ldin+nr-1]
		in = &cin[0]
	}
	kern6x16s(k, &a[0], rs, ks, &b[0], bs, &c[0], ldc, in, ldin, flags)
}

// gemvAVX is implemented in gemv_amd64.s.
//
//go:noescape
func gemvAVX(k int, a *float32, rs, ks int, idx *int32, v *float32, vs int, out *float32, lanes int)

// gemvBlock runs len(out) (8 or 32) independent chains, out[l] =
// fma(a[l*rs+q*ks], v[q*vs], out[l]) for q = 0..k-1 in order; see
// gemvGo. rs must keep 7·rs within int32 (the gather's indices).
func gemvBlock(k int, a []float32, rs, ks int, v []float32, vs int, out []float32) {
	lanes := len(out)
	if !useAsm {
		gemvGo(k, a, rs, ks, v, vs, out)
		return
	}
	if lanes == 32 && ks == 1 && rs != 1 {
		gemvRows(k, a, rs, v, vs, out)
		return
	}
	// The bounds the assembly relies on.
	_ = a[(lanes-1)*rs+(k-1)*ks]
	_ = v[(k-1)*vs]
	var idx [8]int32
	for l := range idx {
		idx[l] = int32(l * rs)
	}
	gemvAVX(k, &a[0], rs, ks, &idx[0], &v[0], vs, &out[0], lanes)
}

// gemvT32 is implemented in gemv_amd64.s.
//
//go:noescape
func gemvT32(blocks int, a *float32, rs int, v *float32, vs int, out *float32)

// gemvRows is gemvBlock for 32 rows whose k is contiguous (ks = 1, rs >
// 1): the first k - k%8 steps transposed in registers, the rest of each
// chain, in order, gathered 8 lanes at a time.
func gemvRows(k int, a []float32, rs int, v []float32, vs int, out []float32) {
	lanes, blocks := len(out), k/8
	if blocks > 0 {
		// The bounds the assembly relies on.
		_ = a[(lanes-1)*rs+8*blocks-1]
		_ = v[(8*blocks-1)*vs]
		gemvT32(blocks, &a[0], rs, &v[0], vs, &out[0])
	}
	if q := 8 * blocks; q < k {
		for g := 0; g < lanes; g += 8 {
			gemvBlock(k-q, a[g*rs+q:], rs, 1, v[q*vs:], vs, out[g:g+8])
		}
	}
}

// outerAVX is implemented in gemv_amd64.s.
//
//go:noescape
func outerAVX(m, n int, a *float32, as int, b *float32, c *float32, ldc int, cin *float32, ldin int, flags int)

// outer computes the k = 1 product of m rows and n columns (a multiple of
// 8); see outerGo.
func outer(m, n int, a []float32, as int, b, c []float32, ldc int, cin []float32, ldin, flags int) {
	if !useAsm {
		outerGo(m, n, a, as, b, c, ldc, cin, ldin, flags)
		return
	}
	// The bounds the assembly relies on.
	_ = a[(m-1)*as]
	_ = b[n-1]
	_ = c[(m-1)*ldc+n-1]
	in := &c[0]
	if flags&loadC != 0 {
		_ = cin[(m-1)*ldin+n-1]
		in = &cin[0]
	}
	outerAVX(m, n, &a[0], as, &b[0], &c[0], ldc, in, ldin, flags)
}
