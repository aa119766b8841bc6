//go:build amd64 && !purego

#include "textflag.h"

// func addToAVX(dst, src *float32, n int): dst[i] += src[i], n a multiple of 8.
TEXT ·addToAVX(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
add_loop:
	VMOVUPS (DI), Y0
	VADDPS  (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $8, CX
	JNZ  add_loop
	VZEROUPPER
	RET

// func reluAVX(x *float32, n int): x[i] = +0 where x[i] < 0 (ordered, so NaN
// and -0 stay), n a multiple of 8.
TEXT ·reluAVX(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	VXORPS Y15, Y15, Y15
relu_loop:
	VMOVUPS (DI), Y0
	VCMPPS  $1, Y15, Y0, Y1 // Y1 = Y0 < 0 (LT_OS)
	VANDNPS Y0, Y1, Y0      // Y0 = ^Y1 & Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  relu_loop
	VZEROUPPER
	RET

// func reluGradAVX(dy, y *float32, n int): dy[i] = +0 where !(y[i] > 0), n a
// multiple of 8.
TEXT ·reluGradAVX(SB), NOSPLIT, $0-24
	MOVQ dy+0(FP), DI
	MOVQ y+8(FP), SI
	MOVQ n+16(FP), CX
	VXORPS Y15, Y15, Y15
grad_loop:
	VMOVUPS (SI), Y0
	VCMPPS  $0x0E, Y15, Y0, Y1 // Y1 = Y0 > 0 (GT_OS)
	VANDPS  (DI), Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $8, CX
	JNZ  grad_loop
	VZEROUPPER
	RET

// func addScaledAVX(y, x *float32, alpha float32, n int): y[i] += alpha·x[i],
// the product rounded before the add (VMULPS then VADDPS, no FMA), n a
// multiple of 8.
TEXT ·addScaledAVX(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	VBROADCASTSS alpha+16(FP), Y15
	MOVQ n+24(FP), CX
scaled_loop:
	VMULPS  (SI), Y15, Y0
	VADDPS  (DI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $8, CX
	JNZ  scaled_loop
	VZEROUPPER
	RET

// func dots4x8AVX(v, vt *float32, d int, out *float32): out[r*8+l] = the
// sum over k = 0..d-1 in order, from +0, of v[r*d+k]·vt[k*8+l] rounded
// (VMULPS then VADDPS, no FMA), r < 4, l < 8; d ≥ 1.
TEXT ·dots4x8AVX(SB), NOSPLIT, $0-32
	MOVQ v+0(FP), SI
	MOVQ vt+8(FP), DI
	MOVQ d+16(FP), CX
	MOVQ out+24(FP), DX
	MOVQ CX, R8
	SHLQ $2, R8
	LEAQ (SI)(R8*2), BX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
dots_loop:
	VMOVUPS (DI), Y4
	VBROADCASTSS (SI), Y5
	VMULPS Y4, Y5, Y5
	VADDPS Y5, Y0, Y0
	VBROADCASTSS (SI)(R8*1), Y6
	VMULPS Y4, Y6, Y6
	VADDPS Y6, Y1, Y1
	VBROADCASTSS (BX), Y7
	VMULPS Y4, Y7, Y7
	VADDPS Y7, Y2, Y2
	VBROADCASTSS (BX)(R8*1), Y8
	VMULPS Y4, Y8, Y8
	VADDPS Y8, Y3, Y3
	ADDQ $4, SI
	ADDQ $4, BX
	ADDQ $32, DI
	DECQ CX
	JNZ  dots_loop
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	VZEROUPPER
	RET
