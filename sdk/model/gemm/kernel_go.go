package gemm

import "math"

// kernelGo is the portable micro-kernel: c[r*ldc+j] (r < mr, j < nr),
// loaded when load is true and +0 otherwise, then for q = 0..k-1 in order
// c = fma(a[q*mr+r], b[q*nr+j], c). The assembly kernel computes the same
// bits.
func kernelGo(k int, a, b, c []float32, ldc int, load bool) {
	flags := 0
	if load {
		flags = loadC
	}
	kernelGoS(k, a, 1, mr, b, nr, c, ldc, c, ldc, flags)
}

// The flags of the strided kernel: start the chains from cin instead of
// +0; store ReLU of the result.
const (
	loadC     = 1
	storeReLU = 2
)

// kernelGoS is kernelGo with A's element (r, q) at a[r*rs+q*ks] and B's
// element (q, j) at b[q*bs+j], the operands read in place; the chains
// start from cin[r*ldin+j] when flags&loadC (ldin 0: one bias row for
// every r) and from +0 otherwise, and with flags&storeReLU every result
// < 0 is stored as +0.
func kernelGoS(k int, a []float32, rs, ks int, b []float32, bs int, c []float32, ldc int, cin []float32, ldin int, flags int) {
	var acc [mr * nr]float32
	if flags&loadC != 0 {
		for r := range mr {
			copy(acc[r*nr:(r+1)*nr], cin[r*ldin:r*ldin+nr])
		}
	}
	for q := range k {
		bq := b[q*bs : q*bs+nr]
		for r := range mr {
			ar := a[r*rs+q*ks]
			row := acc[r*nr : (r+1)*nr]
			for j, bv := range bq {
				row[j] = FMA32(ar, bv, row[j])
			}
		}
	}
	if flags&storeReLU != 0 {
		for i, v := range acc {
			if v < 0 {
				acc[i] = 0
			}
		}
	}
	for r := range mr {
		copy(c[r*ldc:r*ldc+nr], acc[r*nr:(r+1)*nr])
	}
}

// FMA32 returns x·y + z rounded once to float32 (round to nearest even),
// as the hardware's single-precision fused multiply-add does.
//
// x·y is exact in float64 (48 significant bits), so s = x·y + z rounded to
// float64 is one rounding away from the exact value. Rounding s again to
// float32 gives the exact value's float32 rounding unless s landed on a
// float32 rounding boundary (a midpoint between two float32s) that the
// exact value is not on, or s is in float32's subnormal range, where the
// midpoints have fewer bits; only then the rounding error of s, found
// exactly by TwoSum, decides the side.
func FMA32(x, y, z float32) float32 {
	p := float64(x) * float64(y)
	s := p + float64(z)
	bits := math.Float64bits(s)
	const low = 1<<29 - 1 // float64 mantissa bits below float32's
	if bits&low != 1<<28 && math.Abs(s) >= 0x1p-126 {
		return float32(s)
	}
	// TwoSum: err is exactly (p + z) - s.
	bb := s - p
	err := (p - (s - bb)) + (float64(z) - bb)
	if err == 0 || math.IsInf(s, 0) || math.IsNaN(s) {
		return float32(s)
	}
	// Round to odd: step s one float64 ulp toward the exact value when its
	// last bit is even; an odd s never rounds to a wrong float32 neighbour.
	if bits&1 == 0 {
		if (err > 0) == (s > 0) {
			bits++
		} else {
			bits--
		}
		s = math.Float64frombits(bits)
	}
	return float32(s)
}
