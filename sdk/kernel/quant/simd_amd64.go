//go:build amd64 && !purego

package quant

import "golang.org/x/sys/cpu"

// useAVX512 makes the draws with AVX-512's 64-bit multiply (AVX512F and
// AVX512DQ, which x/sys/cpu reports only where the OS saves the ZMM
// registers).
var useAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ

// useF16C adds the binary16 conversions (VCVTPH2PS, VCVTPS2PH) to AVX2's
// loops.
var useF16C = cpu.X86.HasAVX2 && cpu.X86.HasF16C

// The loops of simd_amd64.s and stoch_amd64.s, each on n elements, n a
// multiple of 8; TestSIMDMatchesGo compares each with the Go loop it
// replaces.

// dequantNAVX2 writes dst[i] = Dequant(code i, s, b) for INT4 (bits 4)
// or INT2 (bits 2) codes; nt as dequant8AVX2's.
//
//go:noescape
func dequantNAVX2(dst *float32, codes *byte, n int, s, b float32, bits int, nt bool)

// quantNAVX2 stores nearest-rounded INT4 or INT2 codes, whole bytes.
//
//go:noescape
func quantNAVX2(codes *byte, x *float32, n int, s, b float32, bits int)

// minMaxAVX2 is Params' minimum and maximum, up to the sign of a zero.
//
//go:noescape
func minMaxAVX2(x *float32, n int) (lo, hi float32)

// fromFP16AVX2 converts binary16 codes up to the first block of 8 that
// holds a signalling NaN, and returns where it stopped; nt as
// dequant8AVX2's.
//
//go:noescape
func fromFP16AVX2(dst *float32, src *uint16, n int, nt bool) int

// toFP16AVX2 converts to binary16 with nearest rounding.
//
//go:noescape
func toFP16AVX2(dst *uint16, src *float32, n int)

// drawsAVX2 writes n draws of one stream from 8 starting counters.
//
//go:noescape
func drawsAVX2(u *uint32, start *uint64, n int)

// drawsAVX512 is drawsAVX2 on AVX-512.
//
//go:noescape
func drawsAVX512(u *uint32, start *uint64, n int)

// quantStochAVX2 stores stochastically rounded INT8/4/2 codes.
//
//go:noescape
func quantStochAVX2(codes *byte, x *float32, u *uint32, n int, s, b float32, bits int)

// toFP16StochAVX2 converts to binary16 with stochastic rounding up to the
// first block of 8 with a value outside the normal range, and returns
// where it stopped.
//
//go:noescape
func toFP16StochAVX2(dst *uint16, src *float32, u *uint32, n int) int
