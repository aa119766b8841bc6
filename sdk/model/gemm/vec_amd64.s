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
