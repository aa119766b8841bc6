//go:build amd64 && !purego

package quant

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// withGo runs fn with the SIMD loops off, then restores them.
func withGo(fn func()) {
	avx, f16 := useAVX2, useF16C
	useAVX2, useF16C = false, false
	defer func() { useAVX2, useF16C = avx, f16 }()
	fn()
}

func needSIMD(t *testing.T) {
	if !useAVX2 || !useF16C {
		t.Skip("no AVX2 and F16C here")
	}
}

// specialRow is a random row with some of the values that take the
// loops' edge paths: NaN, ±0 (a zero minimum's sign), ±Inf, binary16
// subnormals and overflow, FP16 and integer ties.
func specialRow(rng *rand.Rand, dim int) []float32 {
	x := randomRow(rng, dim)
	specials := []float32{
		float32(math.NaN()), 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		1e-7, -3e-8, 6.1e-5, 65504, 65519, 65520, -70000, 1 + 1.0/2048, 1e-40, math.Float32frombits(0x7f800001),
	}
	switch rng.IntN(4) {
	case 0: // a few specials
		for range 1 + rng.IntN(3) {
			x[rng.IntN(dim)] = specials[rng.IntN(len(specials))]
		}
	case 1: // integer ties: b = 0, s = 1 at INT8
		for e := range x {
			x[e] = float32(rng.IntN(255)) + 0.5
		}
		x[0], x[dim-1] = 0, 255
	case 2: // zeros of both signs as the minimum
		for e := range x {
			x[e] = rng.Float32()
		}
		x[rng.IntN(dim)] = 0
		x[rng.IntN(dim)] = float32(math.Copysign(0, -1))
	}
	return x
}

// TestSIMDMatchesGo: every precision and rounding stores the same bytes
// and reads back the same bits through the SIMD loops as through the Go
// loops, on random and special rows of every width up to 140 (tails
// included) and values of every magnitude.
func TestSIMDMatchesGo(t *testing.T) {
	needSIMD(t)
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := range 20000 {
		dim := 1 + rng.IntN(140)
		x := specialRow(rng, dim)
		p := []Precision{FP16, INT8, INT4, INT2}[trial%4]
		r := Rounding(trial / 4 % 2)
		key := Key{Seed: uint64(trial), Table: trial % 5, Row: int64(trial), Batch: 3}
		var packed [2][]byte
		var back [2][]float32
		for i := range 2 {
			run := func() {
				packed[i] = make([]byte, RowBytes(p, dim))
				QuantizeRow(packed[i], x, p, r, key)
				back[i] = make([]float32, dim)
				DequantizeRow(back[i], packed[i], p)
			}
			if i == 0 {
				withGo(run)
			} else {
				run()
			}
		}
		for e := range packed[0] {
			if packed[0][e] != packed[1][e] {
				t.Fatalf("trial %d %v %v dim %d: packed byte %d is %#x in Go, %#x with SIMD (row %v)", trial, p, r, dim, e, packed[0][e], packed[1][e], x)
			}
		}
		for e := range back[0] {
			if math.Float32bits(back[0][e]) != math.Float32bits(back[1][e]) {
				t.Fatalf("trial %d %v %v dim %d: element %d reads %g in Go, %g with SIMD", trial, p, r, dim, e, back[0][e], back[1][e])
			}
		}
	}
}

// TestSIMDDequantizeAnyCodes: rows of arbitrary bytes (every code of
// every width, any scale and bias, signalling NaNs among the binary16
// codes) read the same through both loops.
func TestSIMDDequantizeAnyCodes(t *testing.T) {
	needSIMD(t)
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := range 5000 {
		dim := 1 + rng.IntN(140)
		p := []Precision{FP16, INT8, INT4, INT2}[trial%4]
		src := make([]byte, RowBytes(p, dim))
		for i := range src {
			src[i] = byte(rng.Uint32())
		}
		want, got, streamed := make([]float32, dim), make([]float32, dim), make([]float32, dim+16)
		withGo(func() { DequantizeRow(want, src, p) })
		DequantizeRow(got, src, p)
		// Streamed stores into an aligned and a misaligned destination.
		at := trial % 2
		for uintptr(unsafe.Pointer(&streamed[at]))%32 != 0 && at < 8 {
			at++
		}
		at += trial % 2
		DequantizeRowStream(streamed[at:at+dim], src, p)
		StreamFence()
		for e := range want {
			if math.Float32bits(want[e]) != math.Float32bits(got[e]) || math.Float32bits(want[e]) != math.Float32bits(streamed[at+e]) {
				t.Fatalf("trial %d %v dim %d: element %d reads %#x in Go, %#x with SIMD, %#x streamed", trial, p, dim, e, math.Float32bits(want[e]), math.Float32bits(got[e]), math.Float32bits(streamed[at+e]))
			}
		}
	}
}

// TestFP16SIMDAllCodes: every binary16 code converts up as FromFP16 does.
func TestFP16SIMDAllCodes(t *testing.T) {
	needSIMD(t)
	src := make([]uint16, 1<<16)
	for i := range src {
		src[i] = uint16(i)
	}
	dst := make([]float32, len(src))
	for e := 0; e < len(src); {
		e += fromFP16AVX2(&dst[e], &src[e], len(src)-e, uintptr(unsafe.Pointer(&dst[e]))%32 == 0)
		if e < len(src) {
			for j := e; j < e+8; j++ {
				dst[j] = FromFP16(src[j])
			}
			e += 8
		}
	}
	for h, v := range dst {
		if want := FromFP16(uint16(h)); math.Float32bits(v) != math.Float32bits(want) {
			t.Fatalf("code %#04x: SIMD %#08x, FromFP16 %#08x", h, math.Float32bits(v), math.Float32bits(want))
		}
	}
}

// TestFP16SIMDFloat32s: VCVTPS2PH and the stochastic loop give ToFP16's
// code for every float32 whose high 16 bits are any value and whose low 16
// bits are one of the patterns that decide rounding (the dropped bits at
// 0, just below, at and just above a half, all ones, and random ones):
// 2^16 · 24 values, each rounding, draws from a fixed stream.
func TestFP16SIMDFloat32s(t *testing.T) {
	needSIMD(t)
	rng := rand.New(rand.NewPCG(13, 14))
	lows := []uint32{0, 1, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x8000, 0xffff, 0x7fff, 0xf000, 0xefff}
	for len(lows) < 24 {
		lows = append(lows, rng.Uint32()&0xffff)
	}
	x := make([]float32, 1<<16*len(lows))
	for hi := range 1 << 16 {
		for j, lo := range lows {
			x[hi*len(lows)+j] = math.Float32frombits(uint32(hi)<<16 | lo)
		}
	}
	key := Key{Seed: 3, Table: 1, Row: 2, Batch: 4}
	for _, r := range []Rounding{Nearest, Stochastic} {
		const chunk = 1024 // rows of 1024, each its own key's stream
		want, got := make([]byte, 2*chunk), make([]byte, 2*chunk)
		for c := 0; c < len(x); c += chunk {
			key.Row = int64(c)
			withGo(func() { QuantizeRow(want, x[c:c+chunk], FP16, r, key) })
			QuantizeRow(got, x[c:c+chunk], FP16, r, key)
			for e := 0; e < 2*chunk; e += 2 {
				if want[e] != got[e] || want[e+1] != got[e+1] {
					v := x[c+e/2]
					t.Fatalf("%v: %g (%#08x): ToFP16 %#02x%02x, SIMD %#02x%02x", r, v, math.Float32bits(v), want[e+1], want[e], got[e+1], got[e])
				}
			}
		}
	}
}

// TestDrawsSIMD: the vector generators (AVX2, and AVX-512 where the CPU
// has it) give draw's values.
func TestDrawsSIMD(t *testing.T) {
	needSIMD(t)
	for _, avx512 := range []bool{false, true} {
		if avx512 && !useAVX512 {
			t.Log("no AVX-512 here")
			continue
		}
		was := useAVX512
		useAVX512 = avx512
		checkDraws(t)
		useAVX512 = was
	}
}

func checkDraws(t *testing.T) {
	t.Helper()
	u := make([]uint32, 256)
	for _, k := range []Key{{}, {Seed: 1, Table: 2, Row: 3, Batch: 4}, {Seed: math.MaxUint64, Row: -1, Batch: InitBatch}} {
		st := k.stream()
		for _, e0 := range []int{0, 8, 64, 1 << 20} {
			fillDraws(u, st, e0)
			for i, v := range u {
				if want := draw(st, e0+i); v != want {
					t.Fatalf("key %+v element %d: SIMD draw %#x, want %#x", k, e0+i, v, want)
				}
			}
		}
	}
}
