//go:build amd64 && !purego

#include "textflag.h"

// func dequant8AVX2(dst *float32, codes *byte, n int, s, b float32, nt bool)
TEXT ·dequant8AVX2(SB), NOSPLIT, $0-33
	MOVQ dst+0(FP), DI
	MOVQ codes+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS s+24(FP), Y1
	VBROADCASTSS b+28(FP), Y2
dloop:
	CMPQ CX, $8
	JLT ddone
	VPMOVZXBD (SI), Y0
	VCVTDQ2PS Y0, Y0
	VMULPS Y1, Y0, Y0
	VADDPS Y2, Y0, Y0
	CMPB nt+32(FP), $0
	JNE  dnt
	VMOVUPS Y0, (DI)
	JMP  dnext
dnt:
	VMOVNTPS Y0, (DI)
dnext:
	ADDQ $8, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP dloop
ddone:
	VZEROUPPER
	RET

// func quant8AVX2(codes *byte, x *float32, n int, s, b float32)
TEXT ·quant8AVX2(SB), NOSPLIT, $0-32
	MOVQ codes+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS s+24(FP), Y1
	VBROADCASTSS b+28(FP), Y2
	VXORPS Y3, Y3, Y3
	MOVL $0x437f0000, AX // 255.0
	MOVQ AX, X4
	VBROADCASTSS X4, Y4
qloop:
	CMPQ CX, $8
	JLT qdone
	VMOVUPS (SI), Y0
	VSUBPS Y2, Y0, Y0
	VDIVPS Y1, Y0, Y0
	// max(t, 0) returns the second operand (0) when t is NaN.
	VMAXPS Y3, Y0, Y0
	VMINPS Y4, Y0, Y0
	VCVTPS2DQ Y0, Y0
	VEXTRACTI128 $1, Y0, X5
	VPACKUSDW X5, X0, X0
	VPACKUSWB X0, X0, X0
	MOVQ X0, (DI)
	ADDQ $32, SI
	ADDQ $8, DI
	SUBQ $8, CX
	JMP qloop
qdone:
	VZEROUPPER
	RET

// func sfence()
TEXT ·sfence(SB), NOSPLIT, $0-0
	SFENCE
	RET
