//go:build amd64 && !purego

package quant

import "golang.org/x/sys/cpu"

// useAVX2 routes INT8 rows through row_amd64.s where the CPU has AVX2 (the
// OS saves the YMM registers, which x/sys/cpu checks through OSXSAVE). The
// assembly does the pure-Go loops' FP32 operations in the same order, 8
// lanes at once (vdivps, vmulps, vaddps round as divss, mulss, addss; no
// FMA; vcvtps2dq rounds to nearest-even in the default MXCSR mode), so the
// bits are the same; tests compare the two on random rows.
var useAVX2 = cpu.X86.HasAVX2

// dequant8AVX2 writes dst[i] = float32(codes[i])·s + b for i < n, n a
// multiple of 8; nt stores around the caches (dst 32-byte aligned).
//
//go:noescape
func dequant8AVX2(dst *float32, codes *byte, n int, s, b float32, nt bool)

// sfence orders the non-temporal stores before every later store.
func sfence()

// quant8AVX2 writes codes[i] = RNE(clamp((x[i] − b)/s, 0, 255)) for i < n,
// n a multiple of 8; a NaN quotient gives 0.
//
//go:noescape
func quant8AVX2(codes *byte, x *float32, n int, s, b float32)
