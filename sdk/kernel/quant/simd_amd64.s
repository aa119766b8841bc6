//go:build amd64 && !purego

#include "textflag.h"

// The row loops of row.go and fp16.go, 8 elements at a time (n is a
// multiple of 8 everywhere). Each does the scalar code's FP32 operations in
// the same order and rounding (see simd_amd64.go); no FMA.

DATA shift4<>+0(SB)/4, $0
DATA shift4<>+4(SB)/4, $4
DATA shift4<>+8(SB)/4, $8
DATA shift4<>+12(SB)/4, $12
DATA shift4<>+16(SB)/4, $16
DATA shift4<>+20(SB)/4, $20
DATA shift4<>+24(SB)/4, $24
DATA shift4<>+28(SB)/4, $28
GLOBL shift4<>(SB), RODATA|NOPTR, $32

DATA shift2<>+0(SB)/4, $0
DATA shift2<>+4(SB)/4, $2
DATA shift2<>+8(SB)/4, $4
DATA shift2<>+12(SB)/4, $6
DATA shift2<>+16(SB)/4, $8
DATA shift2<>+20(SB)/4, $10
DATA shift2<>+24(SB)/4, $12
DATA shift2<>+28(SB)/4, $14
GLOBL shift2<>(SB), RODATA|NOPTR, $32

// func dequantNAVX2(dst *float32, codes *byte, n int, s, b float32, bits int, nt bool)
//
// dst[i] = float32(code i)·s + b, bits 4 or 2 (element i at bit i·bits of
// the codes, low bits first).
TEXT ·dequantNAVX2(SB), NOSPLIT, $0-41
	MOVBQZX nt+40(FP), R9
	MOVQ dst+0(FP), DI
	MOVQ codes+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS s+24(FP), Y1
	VBROADCASTSS b+28(FP), Y2
	MOVQ bits+32(FP), DX
	CMPQ DX, $4
	JNE  d2
	VMOVDQU shift4<>(SB), Y3
	MOVL $15, AX
	MOVQ AX, X4
	VPBROADCASTD X4, Y4
d4loop:
	CMPQ CX, $8
	JLT  ddone
	VPBROADCASTD (SI), Y0
	VPSRLVD Y3, Y0, Y0
	VPAND Y4, Y0, Y0
	VCVTDQ2PS Y0, Y0
	VMULPS Y1, Y0, Y0
	VADDPS Y2, Y0, Y0
	TESTQ R9, R9
	JNE  d4nt
	VMOVUPS Y0, (DI)
	JMP  d4next
d4nt:
	VMOVNTPS Y0, (DI)
d4next:
	ADDQ $4, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  d4loop
d2:
	VMOVDQU shift2<>(SB), Y3
	MOVL $3, AX
	MOVQ AX, X4
	VPBROADCASTD X4, Y4
d2loop:
	CMPQ CX, $8
	JLT  ddone
	MOVWLZX (SI), AX
	MOVQ AX, X0
	VPBROADCASTD X0, Y0
	VPSRLVD Y3, Y0, Y0
	VPAND Y4, Y0, Y0
	VCVTDQ2PS Y0, Y0
	VMULPS Y1, Y0, Y0
	VADDPS Y2, Y0, Y0
	TESTQ R9, R9
	JNE  d2nt
	VMOVUPS Y0, (DI)
	JMP  d2next
d2nt:
	VMOVNTPS Y0, (DI)
d2next:
	ADDQ $2, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  d2loop
ddone:
	VZEROUPPER
	RET

// func quantNAVX2(codes *byte, x *float32, n int, s, b float32, bits int)
//
// Stores RNE(clamp((x[i] − b)/s, 0, 2^bits − 1)) at bit i·bits, bits 4 or
// 2, overwriting the bytes (a NaN quotient gives 0).
TEXT ·quantNAVX2(SB), NOSPLIT, $0-40
	MOVQ codes+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS s+24(FP), Y1
	VBROADCASTSS b+28(FP), Y2
	MOVQ bits+32(FP), DX
	VXORPS Y3, Y3, Y3
	CMPQ DX, $4
	JNE  q2
	MOVL $0x41700000, AX // 15.0
	VMOVDQU shift4<>(SB), Y6
	JMP  qgo
q2:
	MOVL $0x40400000, AX // 3.0
	VMOVDQU shift2<>(SB), Y6
qgo:
	MOVQ AX, X4
	VBROADCASTSS X4, Y4
qloop:
	CMPQ CX, $8
	JLT  qdone
	VMOVUPS (SI), Y0
	VSUBPS Y2, Y0, Y0
	VDIVPS Y1, Y0, Y0
	VMAXPS Y3, Y0, Y0
	VMINPS Y4, Y0, Y0
	VCVTPS2DQ Y0, Y0
	VPSLLVD Y6, Y0, Y0
	VEXTRACTI128 $1, Y0, X5
	VPOR X5, X0, X0
	VPSHUFD $0x4e, X0, X5
	VPOR X5, X0, X0
	VPSHUFD $0xb1, X0, X5
	VPOR X5, X0, X0
	MOVQ X0, AX
	CMPQ DX, $4
	JNE  qst2
	MOVL AX, (DI)
	ADDQ $4, DI
	JMP  qnext
qst2:
	MOVW AX, (DI)
	ADDQ $2, DI
qnext:
	ADDQ $32, SI
	SUBQ $8, CX
	JMP  qloop
qdone:
	VZEROUPPER
	RET

// func minMaxAVX2(x *float32, n int) (lo, hi float32)
//
// lo = min and hi = max of x[:n] by the scalar loop's comparisons (v < lo,
// v > hi: a NaN never replaces), from +Inf and −Inf. Only the sign of a
// zero result can differ from the scalar loop's; the caller checks.
TEXT ·minMaxAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVL $0x7f800000, AX
	MOVQ AX, X1
	VBROADCASTSS X1, Y1 // lo
	MOVL $0xff800000, AX
	MOVQ AX, X2
	VBROADCASTSS X2, Y2 // hi
mloop:
	CMPQ CX, $8
	JLT  mdone
	VMOVUPS (SI), Y0
	// Intel vminps lo, x, lo: x < lo ? x : lo (a NaN x keeps lo).
	VMINPS Y1, Y0, Y1
	VMAXPS Y2, Y0, Y2
	ADDQ $32, SI
	SUBQ $8, CX
	JMP  mloop
mdone:
	VEXTRACTF128 $1, Y1, X3
	VMINPS X3, X1, X1
	VPSHUFD $0x4e, X1, X3
	VMINPS X3, X1, X1
	VPSHUFD $0xb1, X1, X3
	VMINPS X3, X1, X1
	VEXTRACTF128 $1, Y2, X3
	VMAXPS X3, X2, X2
	VPSHUFD $0x4e, X2, X3
	VMAXPS X3, X2, X2
	VPSHUFD $0xb1, X2, X3
	VMAXPS X3, X2, X2
	MOVSS X1, lo+16(FP)
	MOVSS X2, hi+20(FP)
	VZEROUPPER
	RET

// func fromFP16AVX2(dst *float32, src *uint16, n int, nt bool) int
//
// dst[i] = FromFP16(src[i]) by VCVTPH2PS, which equals FromFP16 for every
// code but a signalling NaN (it quiets it): a block of 8 that holds one
// stops the loop, and the index of that block is returned (n when none).
TEXT ·fromFP16AVX2(SB), NOSPLIT, $0-40
	MOVBQZX nt+24(FP), R9
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ BX, BX
	MOVL $0x7e00, AX
	MOVQ AX, X5
	VPBROADCASTW X5, X5
	MOVL $0x7c00, AX
	MOVQ AX, X6
	VPBROADCASTW X6, X6
	MOVL $0x01ff, AX
	MOVQ AX, X7
	VPBROADCASTW X7, X7
	VPXOR X8, X8, X8
hloop:
	CMPQ BX, CX
	JGE  hdone
	VMOVDQU (SI)(BX*2), X0
	VPAND X5, X0, X1
	VPCMPEQW X6, X1, X1 // exponent all ones, quiet bit clear
	VPAND X7, X0, X2
	VPCMPEQW X8, X2, X2 // rest of the payload zero
	VPANDN X1, X2, X1   // ~X2 & X1: a signalling NaN
	VPTEST X1, X1
	JNZ  hdone
	VCVTPH2PS X0, Y0
	TESTQ R9, R9
	JNE  hnt
	VMOVUPS Y0, (DI)(BX*4)
	JMP  hnext
hnt:
	VMOVNTPS Y0, (DI)(BX*4)
hnext:
	ADDQ $8, BX
	JMP  hloop
hdone:
	MOVQ BX, ret+32(FP)
	VZEROUPPER
	RET

// func toFP16AVX2(dst *uint16, src *float32, n int)
//
// dst[i] = ToFP16(src[i], Nearest, 0) by VCVTPS2PH with round to nearest
// even (imm 0): the same for every float32 (tested).
TEXT ·toFP16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
tloop:
	CMPQ CX, $8
	JLT  tdone
	VMOVUPS (SI), Y0
	VCVTPS2PH $0, Y0, X0
	VMOVDQU X0, (DI)
	ADDQ $32, SI
	ADDQ $16, DI
	SUBQ $8, CX
	JMP  tloop
tdone:
	VZEROUPPER
	RET
