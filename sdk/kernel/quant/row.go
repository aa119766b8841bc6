package quant

import (
	"encoding/binary"
	"math"
)

// A packed row is RowBytes(p, dim) bytes:
//
//   - FP32: dim little-endian float32s.
//   - FP16: dim little-endian binary16 codes.
//   - INT8/INT4/INT2: the FP32 scale s, the FP32 bias b (little-endian),
//     then the codes, element e at bit (e·N) mod 8 of byte e·N/8: INT4 two
//     to a byte, INT2 four, low bits first. No padding, so a row is exactly
//     Eq. 3's bits·D + 64 bits when bits·D is a multiple of 8.

// RowBytes is the bytes of one packed row of dim values at precision p.
func RowBytes(p Precision, dim int) int {
	switch {
	case p == FP32:
		return 4 * dim
	case p == FP16:
		return 2 * dim
	}
	return 8 + (dim*p.Bits()+7)/8
}

// Params is a row's quantization: scale and bias, from the row's minimum and
// maximum (Sec. 3: b = min(x), s = (max(x) − min(x))/(2^N − 1)), NaN
// elements ignored. A row whose range is 0 or not finite gets s = 0: its
// every code is 0 and it dequantizes to b.
func Params(x []float32, levels int) (s, b float32) {
	if len(x) == 0 {
		return 0, 0
	}
	lo, hi := minMax(x)
	if lo > hi { // every element NaN
		return 0, 0
	}
	s = float32(hi-lo) / float32(levels)
	if !(s > 0) || math.IsInf(float64(s), 0) {
		s = 0
	}
	return s, lo
}

// Code is the code of value v in a row with scale s and bias b: (v − b)/s,
// clamped to [0, levels], rounded by r (u is the element's draw for
// Stochastic). s = 0 gives 0.
func Code(v, s, b float32, levels int, r Rounding, u uint32) uint8 {
	if s == 0 {
		return 0
	}
	t := float64(float32(float32(v-b) / s))
	switch {
	case !(t > 0): // also NaN
		return 0
	case t >= float64(levels):
		return uint8(levels)
	}
	if r == Stochastic {
		fl := float64(int64(t)) // floor: t > 0
		if roundUp(u, t-fl) {
			fl++
		}
		return uint8(fl)
	}
	// Round half to even: for 0 ≤ t < 2^52, adding and subtracting 2^52
	// rounds t to an integer in the FPU's default mode, ties to even
	// (math.RoundToEven's result, faster).
	return uint8((t + 0x1p52) - 0x1p52)
}

// Dequant is the value of code q: q·s + b, rounded to FP32 after each
// operation (never fused).
func Dequant(q uint8, s, b float32) float32 { return float32(float32(q)*s) + b }

// QuantizeRow stores x (dim values) into dst (RowBytes(p, len(x)) bytes)
// at precision p with rounding r; a stochastic rounding draws from key.
func QuantizeRow(dst []byte, x []float32, p Precision, r Rounding, key Key) {
	switch {
	case p == FP32:
		for e, v := range x {
			binary.LittleEndian.PutUint32(dst[4*e:], math.Float32bits(v))
		}
		return
	case p == FP16:
		quantizeFP16(dst, x, r, key)
		return
	}
	levels, bits := p.Levels(), p.Bits()
	s, b := Params(x, levels)
	binary.LittleEndian.PutUint32(dst, math.Float32bits(s))
	binary.LittleEndian.PutUint32(dst[4:], math.Float32bits(b))
	codes := dst[8:RowBytes(p, len(x))]
	clear(codes)
	if s == 0 {
		return // codes 0
	}
	if r == Nearest {
		quantizeNearest(codes, x, bits, s, b, float64(levels))
		return
	}
	st := key.stream()
	done := 0
	if useAVX2 && len(x) >= 8 {
		done = len(x) &^ 7
		quantizeStochSIMD(codes, x[:done], bits, s, b, st)
	}
	for e := done; e < len(x); e++ {
		q := Code(x[e], s, b, levels, r, draw(st, e))
		at := e * bits
		codes[at>>3] |= q << (at & 7)
	}
}

// quantizeNearest is QuantizeRow's loop for nearest rounding and s > 0:
// Code's arithmetic, inlined.
func quantizeNearest(codes []byte, x []float32, bits int, s, b float32, levels float64) {
	done := 0
	if useAVX2 && len(x) >= 8 {
		done = len(x) &^ 7
		if bits == 8 {
			quant8AVX2(&codes[0], &x[0], done, s, b)
		} else {
			quantNAVX2(&codes[0], &x[0], done, s, b, bits)
		}
	}
	for e := done; e < len(x); e++ {
		v := x[e]
		t := float64(float32(float32(v-b) / s))
		var q uint8
		switch {
		case !(t > 0):
		case t >= levels:
			q = uint8(levels)
		default:
			q = uint8((t + 0x1p52) - 0x1p52)
		}
		at := e * bits
		codes[at>>3] |= q << (at & 7)
	}
}

// DequantizeRow reads a packed row of len(dst) values at precision p into
// dst.
func DequantizeRow(dst []float32, src []byte, p Precision) { dequantizeRow(dst, src, p, false) }

// dequantizeRow is DequantizeRow; nt sends the SIMD loops' stores around
// the caches (dst 32-byte aligned).
func dequantizeRow(dst []float32, src []byte, p Precision, nt bool) {
	switch {
	case p == FP32:
		for e := range dst {
			dst[e] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*e:]))
		}
		return
	case p == FP16:
		dequantizeFP16(dst, src, nt)
		return
	}
	s := math.Float32frombits(binary.LittleEndian.Uint32(src))
	b := math.Float32frombits(binary.LittleEndian.Uint32(src[4:]))
	dequantizeCodes(dst, src[8:], p, s, b, nt)
}

// dequantizeCodes is DequantizeRow's loop: INT8 straight, INT4 and INT2
// through the row's table of 16 or 4 values (each Dequant(q, s, b), so the
// bits are the same).
func dequantizeCodes(dst []float32, codes []byte, p Precision, s, b float32, nt bool) {
	switch p {
	case INT8:
		codes = codes[:len(dst)]
		done := 0
		if useAVX2 && len(dst) >= 8 {
			done = len(dst) &^ 7
			dequant8AVX2(&dst[0], &codes[0], done, s, b, nt)
		}
		for e := done; e < len(dst); e++ {
			dst[e] = Dequant(codes[e], s, b)
		}
		return
	}
	done := 0
	if useAVX2 && len(dst) >= 8 {
		done = len(dst) &^ 7
		dequantNAVX2(&dst[0], &codes[0], done, s, b, p.Bits(), nt)
	}
	if done == len(dst) {
		return
	}
	if p == INT4 {
		var lut [16]float32
		for q := range lut {
			lut[q] = Dequant(uint8(q), s, b)
		}
		for e := done; e < len(dst); e++ {
			dst[e] = lut[codes[e>>1]>>(4*(e&1))&15]
		}
		return
	}
	var lut [4]float32
	for q := range lut {
		lut[q] = Dequant(uint8(q), s, b)
	}
	for e := done; e < len(dst); e++ {
		dst[e] = lut[codes[e>>2]>>(2*(e&3))&3]
	}
}

// FakeQuantize replaces x by what storing it at precision p with rounding
// r and reading it back gives (the paper's CPU emulation, Sec. 4.1):
// bit-identical to QuantizeRow followed by DequantizeRow.
func FakeQuantize(x []float32, p Precision, r Rounding, key Key) {
	var st uint64
	if r == Stochastic {
		st = key.stream()
	}
	u := func(e int) uint32 {
		if r == Stochastic {
			return draw(st, e)
		}
		return 0
	}
	switch {
	case p == FP32:
		return
	case p == FP16:
		for e, v := range x {
			x[e] = FromFP16(ToFP16(v, r, u(e)))
		}
		return
	}
	levels := p.Levels()
	s, b := Params(x, levels)
	for e, v := range x {
		x[e] = Dequant(Code(v, s, b, levels, r, u(e)), s, b)
	}
}
