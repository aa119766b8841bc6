//go:build amd64 && !purego

#include "textflag.h"

// func gemvAVX(k int, a *float32, rs, ks int, idx *int32, v *float32, vs int, out *float32, lanes int)
//
// The lanes (8 or 32) chains out[l] = fma(a[l*rs+q*ks], v[q*vs], out[l])
// for q = 0..k-1 in order, each lane of a YMM accumulator its own chain:
// a matrix-vector product vectorised across the rows of C, never across
// k. With rs = 1 the lanes are loaded as vectors, otherwise gathered
// (idx holds l*rs for l < 8).
TEXT ·gemvAVX(SB), NOSPLIT, $0-72
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ rs+16(FP), R10
	MOVQ ks+24(FP), R11
	SHLQ $2, R11
	MOVQ idx+32(FP), AX
	MOVQ v+40(FP), DI
	MOVQ vs+48(FP), R12
	SHLQ $2, R12
	MOVQ out+56(FP), DX
	MOVQ lanes+64(FP), BX
	CMPQ BX, $8
	JEQ  eight
	VMOVUPS (DX), Y0
	VMOVUPS 32(DX), Y1
	VMOVUPS 64(DX), Y2
	VMOVUPS 96(DX), Y3
	CMPQ R10, $1
	JNE  gather32

loop32:
	VBROADCASTSS (DI), Y4
	VFMADD231PS (SI), Y4, Y0
	VFMADD231PS 32(SI), Y4, Y1
	VFMADD231PS 64(SI), Y4, Y2
	VFMADD231PS 96(SI), Y4, Y3
	ADDQ R11, SI
	ADDQ R12, DI
	DECQ CX
	JNZ  loop32
	JMP  store32

gather32:
	VMOVDQU (AX), Y8
	SHLQ $5, R10 // 8 lanes' stride in bytes
	MOVQ SI, R8
	ADDQ R10, R8
	MOVQ R8, R9
	ADDQ R10, R9
	MOVQ R9, R13
	ADDQ R10, R13

g32:
	VBROADCASTSS (DI), Y4
	VPCMPEQD Y5, Y5, Y5
	VPCMPEQD Y7, Y7, Y7
	VPCMPEQD Y10, Y10, Y10
	VPCMPEQD Y12, Y12, Y12
	VGATHERDPS Y5, (SI)(Y8*4), Y6
	VGATHERDPS Y7, (R8)(Y8*4), Y9
	VGATHERDPS Y10, (R9)(Y8*4), Y11
	VGATHERDPS Y12, (R13)(Y8*4), Y13
	VFMADD231PS Y6, Y4, Y0
	VFMADD231PS Y9, Y4, Y1
	VFMADD231PS Y11, Y4, Y2
	VFMADD231PS Y13, Y4, Y3
	ADDQ R11, SI
	ADDQ R11, R8
	ADDQ R11, R9
	ADDQ R11, R13
	ADDQ R12, DI
	DECQ CX
	JNZ  g32

store32:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	VZEROUPPER
	RET

eight:
	VMOVUPS (DX), Y0
	CMPQ R10, $1
	JNE  gather8

loop8:
	VBROADCASTSS (DI), Y4
	VFMADD231PS (SI), Y4, Y0
	ADDQ R11, SI
	ADDQ R12, DI
	DECQ CX
	JNZ  loop8
	JMP  store8

gather8:
	VMOVDQU (AX), Y8

g8:
	VBROADCASTSS (DI), Y4
	VPCMPEQD Y5, Y5, Y5
	VGATHERDPS Y5, (SI)(Y8*4), Y6
	VFMADD231PS Y6, Y4, Y0
	ADDQ R11, SI
	ADDQ R12, DI
	DECQ CX
	JNZ  g8

store8:
	VMOVUPS Y0, (DX)
	VZEROUPPER
	RET

// Rows r0..r3 of one 8×8 block (8 rows, 8 k) loaded from P (rows at P,
// P+R10, P+2·R10, P+R13 = P+3·R10) and transposed half-way: Y(s0..s3)
// hold, per 128-bit half, rows 0-3 at k = j and k = j+4.
#define HALF(P, s0, s1, s2, s3) \
	VMOVUPS (P), s0; \
	VMOVUPS (P)(R10*1), s1; \
	VMOVUPS (P)(R10*2), s2; \
	VMOVUPS (P)(R13*1), s3; \
	VUNPCKLPS s1, s0, Y8; \
	VUNPCKHPS s1, s0, Y9; \
	VUNPCKLPS s3, s2, Y10; \
	VUNPCKHPS s3, s2, Y11; \
	VSHUFPS $0x44, Y10, Y8, s0; \
	VSHUFPS $0xEE, Y10, Y8, s1; \
	VSHUFPS $0x44, Y11, Y9, s2; \
	VSHUFPS $0xEE, Y11, Y9, s3

// ReLU of y at the store, t a scratch register (Y14 = 0).
#define OUTRELU(y, t) \
	VCMPPS  $1, Y14, y, t; \
	VANDNPS y, t, y

// func outerAVX(m, n int, a *float32, as int, b *float32, c *float32, ldc int, cin *float32, ldin int, flags int)
//
// The products of k = 1: c[i*ldc+j] = fma(a[i*as], b[j], start) for
// i < m, j < n (a multiple of 8), start cin[i*ldin+j] with flags&1 (C
// itself, or with ldin 0 a bias row) and +0 otherwise; with flags&2 ReLU
// at the store. Each element is one fused operation, as the contract's
// chain of length 1.
TEXT ·outerAVX(SB), NOSPLIT, $0-80
	MOVQ m+0(FP), CX
	MOVQ a+16(FP), SI
	MOVQ as+24(FP), R10
	SHLQ $2, R10
	MOVQ c+40(FP), DX
	MOVQ ldc+48(FP), R8
	SHLQ $2, R8
	MOVQ cin+56(FP), R9
	MOVQ ldin+64(FP), R13
	SHLQ $2, R13
	MOVQ flags+72(FP), AX
	VXORPS Y14, Y14, Y14

orow:
	VBROADCASTSS (SI), Y15
	MOVQ b+32(FP), DI
	MOVQ n+8(FP), BX
	XORQ R11, R11

ocol:
	CMPQ BX, $32
	JLT  ocol8
	VXORPS Y0, Y0, Y0
	VXORPS Y2, Y2, Y2
	VXORPS Y4, Y4, Y4
	VXORPS Y6, Y6, Y6
	TESTQ $1, AX
	JZ   ofma32
	VMOVUPS (R9)(R11*1), Y0
	VMOVUPS 32(R9)(R11*1), Y2
	VMOVUPS 64(R9)(R11*1), Y4
	VMOVUPS 96(R9)(R11*1), Y6

ofma32:
	VFMADD231PS (DI)(R11*1), Y15, Y0
	VFMADD231PS 32(DI)(R11*1), Y15, Y2
	VFMADD231PS 64(DI)(R11*1), Y15, Y4
	VFMADD231PS 96(DI)(R11*1), Y15, Y6
	TESTQ $2, AX
	JZ   oput32
	OUTRELU(Y0, Y1)
	OUTRELU(Y2, Y3)
	OUTRELU(Y4, Y5)
	OUTRELU(Y6, Y7)

oput32:
	VMOVUPS Y0, (DX)(R11*1)
	VMOVUPS Y2, 32(DX)(R11*1)
	VMOVUPS Y4, 64(DX)(R11*1)
	VMOVUPS Y6, 96(DX)(R11*1)
	ADDQ $128, R11
	SUBQ $32, BX
	JNZ  ocol
	JMP  onext

ocol8:
	VXORPS Y0, Y0, Y0
	TESTQ $1, AX
	JZ   ofma
	VMOVUPS (R9)(R11*1), Y0

ofma:
	VFMADD231PS (DI)(R11*1), Y15, Y0
	TESTQ $2, AX
	JZ   oput
	OUTRELU(Y0, Y1)

oput:
	VMOVUPS Y0, (DX)(R11*1)
	ADDQ $32, R11
	SUBQ $8, BX
	JNZ  ocol

onext:
	ADDQ R10, SI
	ADDQ R8, DX
	ADDQ R13, R9
	DECQ CX
	JNZ  orow
	VZEROUPPER
	RET

// One group of 8 rows (P the first four, Q the next) and 8 k steps: the
// transpose's columns k0..k7 (in Y8, Y10, Y0, Y1, Y9, Y11, Y4, Y5), each
// fused in order into ACC with v's broadcast value (Y2, Y3, Y6, Y7),
// leaving Y12..Y15 to four accumulators.
#define GROUP4(P, Q, ACC) \
	HALF(P, Y0, Y1, Y2, Y3); \
	HALF(Q, Y4, Y5, Y6, Y7); \
	VPERM2F128 $0x20, Y4, Y0, Y8; \
	VPERM2F128 $0x31, Y4, Y0, Y9; \
	VPERM2F128 $0x20, Y5, Y1, Y10; \
	VPERM2F128 $0x31, Y5, Y1, Y11; \
	VPERM2F128 $0x20, Y6, Y2, Y0; \
	VPERM2F128 $0x31, Y6, Y2, Y4; \
	VPERM2F128 $0x20, Y7, Y3, Y1; \
	VPERM2F128 $0x31, Y7, Y3, Y5; \
	VBROADCASTSS (DI), Y2; \
	VFMADD231PS Y8, Y2, ACC; \
	VBROADCASTSS (DI)(R12*1), Y3; \
	VFMADD231PS Y10, Y3, ACC; \
	VBROADCASTSS (DI)(R12*2), Y6; \
	VFMADD231PS Y0, Y6, ACC; \
	VBROADCASTSS (DI)(AX*1), Y7; \
	VFMADD231PS Y1, Y7, ACC; \
	VBROADCASTSS (DI)(R12*4), Y2; \
	VFMADD231PS Y9, Y2, ACC; \
	VBROADCASTSS (DX)(R12*1), Y3; \
	VFMADD231PS Y11, Y3, ACC; \
	VBROADCASTSS (DX)(R12*2), Y6; \
	VFMADD231PS Y4, Y6, ACC; \
	VBROADCASTSS (DX)(AX*1), Y7; \
	VFMADD231PS Y5, Y7, ACC

// func gemvT32(blocks int, a *float32, rs int, v *float32, vs int, out *float32)
//
// 32 chains out[l] = fma(a[l*rs+q], v[q*vs], out[l]) for q = 0..8·blocks-1
// in order: rows of C whose k is contiguous in memory, loaded 8 k at a
// time and transposed in registers so that each lane is one row's chain
// (a gather per k is several times slower on this machine); four groups
// of 8 rows keep four chains in flight.
TEXT ·gemvT32(SB), NOSPLIT, $0-48
	MOVQ blocks+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ rs+16(FP), R10
	SHLQ $2, R10 // row stride in bytes
	LEAQ (R10)(R10*2), R13
	MOVQ v+24(FP), DI
	MOVQ vs+32(FP), R12
	SHLQ $2, R12
	LEAQ (R12)(R12*2), AX
	MOVQ out+40(FP), R11
	VMOVUPS (R11), Y12
	VMOVUPS 32(R11), Y13
	VMOVUPS 64(R11), Y14
	VMOVUPS 96(R11), Y15
	MOVQ R10, R14
	SHLQ $3, R14 // 8 rows in bytes

t32:
	LEAQ (DI)(R12*4), DX
	MOVQ SI, BX
	LEAQ (BX)(R10*4), R8
	GROUP4(BX, R8, Y12)
	ADDQ R14, BX
	LEAQ (BX)(R10*4), R8
	GROUP4(BX, R8, Y13)
	ADDQ R14, BX
	LEAQ (BX)(R10*4), R8
	GROUP4(BX, R8, Y14)
	ADDQ R14, BX
	LEAQ (BX)(R10*4), R8
	GROUP4(BX, R8, Y15)
	ADDQ $32, SI
	LEAQ (DX)(R12*4), DI
	DECQ CX
	JNZ  t32

	VMOVUPS Y12, (R11)
	VMOVUPS Y13, 32(R11)
	VMOVUPS Y14, 64(R11)
	VMOVUPS Y15, 96(R11)
	VZEROUPPER
	RET
