package quant

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// The row loops that dispatch to the SIMD ones (simd_amd64.s,
// stoch_amd64.s; useAVX2 and useF16C are false elsewhere and under
// -tags purego) on whole blocks of 8 and finish the row in Go.

// drawChunk is how many draws the stochastic loops make at a time (a
// multiple of 8, on the stack).
const drawChunk = 64

// fillDraws writes u[i] = draw(stream, e0+i), len(u) a multiple of 8.
func fillDraws(u []uint32, stream uint64, e0 int) {
	var start [8]uint64
	for j := range start {
		start[j] = stream + uint64(e0+j)*drawStep
	}
	if useAVX512 {
		drawsAVX512(&u[0], &start[0], len(u))
		return
	}
	drawsAVX2(&u[0], &start[0], len(u))
}

// minMax is Params' scan: the least and greatest non-NaN element by the
// comparisons v < lo and v > hi from +Inf and −Inf, so the first of equal
// values wins. The SIMD scan compares in 8 lanes and merges them, which
// can only pick another zero of the other sign; a zero minimum (the one
// whose sign reaches the stored bias) is rescanned in order.
func minMax(x []float32) (lo, hi float32) {
	lo, hi = float32(math.Inf(1)), float32(math.Inf(-1))
	done := 0
	if useAVX2 && len(x) >= 8 {
		done = len(x) &^ 7
		lo, hi = minMaxAVX2(&x[0], done)
	}
	for _, v := range x[done:] {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	if done > 0 && lo == 0 {
		lo, hi = float32(math.Inf(1)), float32(math.Inf(-1))
		for _, v := range x {
			if v < lo {
				lo = v
			}
			if v > hi {
				hi = v
			}
		}
	}
	return lo, hi
}

// quantizeStochSIMD stores the stochastic codes of x (len a multiple of
// 8), drawChunk draws at a time.
func quantizeStochSIMD(codes []byte, x []float32, bits int, s, b float32, stream uint64) {
	var u [drawChunk]uint32
	for c := 0; c < len(x); c += drawChunk {
		m := min(drawChunk, len(x)-c)
		fillDraws(u[:m], stream, c)
		quantStochAVX2(&codes[c*bits/8], &x[c], &u[0], m, s, b, bits)
	}
}

// u16 is the binary16 codes of a packed FP16 row (little-endian, and the
// SIMD loops run only on amd64).
func u16(b []byte) *uint16 { return (*uint16)(unsafe.Pointer(&b[0])) }

// quantizeFP16 stores x as binary16 codes with rounding r.
func quantizeFP16(dst []byte, x []float32, r Rounding, key Key) {
	var st uint64
	if r == Stochastic {
		st = key.stream()
	}
	done := 0
	if useF16C && len(x) >= 8 {
		done = len(x) &^ 7
		if r == Nearest {
			toFP16AVX2(u16(dst), &x[0], done)
		} else {
			fp16StochSIMD(dst, x[:done], st)
		}
	}
	for e := done; e < len(x); e++ {
		var u uint32
		if r == Stochastic {
			u = draw(st, e)
		}
		binary.LittleEndian.PutUint16(dst[2*e:], ToFP16(x[e], r, u))
	}
}

// fp16StochSIMD is quantizeFP16's stochastic loop on len(x) a multiple
// of 8: the SIMD loop takes the blocks of normal values, ToFP16 the rest.
func fp16StochSIMD(dst []byte, x []float32, stream uint64) {
	var u [drawChunk]uint32
	for c := 0; c < len(x); c += drawChunk {
		m := min(drawChunk, len(x)-c)
		fillDraws(u[:m], stream, c)
		for i := 0; i < m; {
			i += toFP16StochAVX2(u16(dst[2*(c+i):]), &x[c+i], &u[i], m-i)
			if i == m {
				break
			}
			for j := i; j < i+8; j++ {
				binary.LittleEndian.PutUint16(dst[2*(c+j):], ToFP16(x[c+j], Stochastic, u[j]))
			}
			i += 8
		}
	}
}

// dequantizeFP16 reads len(dst) binary16 codes (nt: see DequantizeRowStream).
func dequantizeFP16(dst []float32, src []byte, nt bool) {
	n := 0
	if useF16C && len(dst) >= 8 {
		n = len(dst) &^ 7
	}
	for e := 0; e < n; {
		e += fromFP16AVX2(&dst[e], u16(src[2*e:]), n-e, nt)
		if e == n {
			break
		}
		for j := e; j < e+8; j++ { // a signalling NaN in this block
			dst[j] = FromFP16(binary.LittleEndian.Uint16(src[2*j:]))
		}
		e += 8
	}
	for e := n; e < len(dst); e++ {
		dst[e] = FromFP16(binary.LittleEndian.Uint16(src[2*e:]))
	}
}

// DequantizeRowStream is DequantizeRow (the same bits) with the SIMD loops'
// stores going around the caches when dst is 32-byte aligned: for a batch
// of rows much larger than the caches, which would otherwise read every
// destination line before writing it. Call StreamFence after the last
// row, before another goroutine reads dst.
func DequantizeRowStream(dst []float32, src []byte, p Precision) {
	dequantizeRow(dst, src, p, len(dst) > 0 && uintptr(unsafe.Pointer(&dst[0]))%32 == 0)
}

// StreamFence orders DequantizeRowStream's stores before every later one.
func StreamFence() { sfence() }
