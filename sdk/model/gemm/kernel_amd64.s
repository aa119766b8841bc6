//go:build amd64 && !purego

#include "textflag.h"

// One k step: B's 16 floats at boff(DI) into Y12:Y13, then for each of the
// 6 rows broadcast A's float at aoff(SI) and fuse it into that row's two
// accumulators (VFMADD231PS x, y, z: z = y·x + z, rounded once).
#define STEP(aoff, boff) \
	VMOVUPS boff(DI), Y12; \
	VMOVUPS boff+32(DI), Y13; \
	VBROADCASTSS aoff(SI), Y14; \
	VBROADCASTSS aoff+4(SI), Y15; \
	VFMADD231PS Y12, Y14, Y0; \
	VFMADD231PS Y13, Y14, Y1; \
	VFMADD231PS Y12, Y15, Y2; \
	VFMADD231PS Y13, Y15, Y3; \
	VBROADCASTSS aoff+8(SI), Y14; \
	VBROADCASTSS aoff+12(SI), Y15; \
	VFMADD231PS Y12, Y14, Y4; \
	VFMADD231PS Y13, Y14, Y5; \
	VFMADD231PS Y12, Y15, Y6; \
	VFMADD231PS Y13, Y15, Y7; \
	VBROADCASTSS aoff+16(SI), Y14; \
	VBROADCASTSS aoff+20(SI), Y15; \
	VFMADD231PS Y12, Y14, Y8; \
	VFMADD231PS Y13, Y14, Y9; \
	VFMADD231PS Y12, Y15, Y10; \
	VFMADD231PS Y13, Y15, Y11

// func kern6x16(k int, a, b, c *float32, ldc int, load bool)
//
// The 6×16 tile at c (row stride ldc floats) starts as its old value when
// load is true and +0 otherwise; then for q = 0..k-1 in order every element
// c[r][j] = fma(a[q*6+r], b[q*16+j], c[r][j]). a and b are the packed
// panels (k-major). Each element is one lane of one accumulator, so its
// chain of fused operations is the scalar one (kernelGo).
TEXT ·kern6x16(SB), NOSPLIT, $0-41
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8 // row stride in bytes
	MOVBLZX load+40(FP), AX
	TESTQ AX, AX
	JZ   zero
	MOVQ DX, R9
	VMOVUPS (R9), Y0
	VMOVUPS 32(R9), Y1
	ADDQ R8, R9
	VMOVUPS (R9), Y2
	VMOVUPS 32(R9), Y3
	ADDQ R8, R9
	VMOVUPS (R9), Y4
	VMOVUPS 32(R9), Y5
	ADDQ R8, R9
	VMOVUPS (R9), Y6
	VMOVUPS 32(R9), Y7
	ADDQ R8, R9
	VMOVUPS (R9), Y8
	VMOVUPS 32(R9), Y9
	ADDQ R8, R9
	VMOVUPS (R9), Y10
	VMOVUPS 32(R9), Y11
	JMP  loop4

zero:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

loop4:
	CMPQ CX, $4
	JLT  loop1
	STEP(0, 0)
	STEP(24, 64)
	STEP(48, 128)
	STEP(72, 192)
	ADDQ $96, SI
	ADDQ $256, DI
	SUBQ $4, CX
	JMP  loop4

loop1:
	TESTQ CX, CX
	JZ   store
	STEP(0, 0)
	ADDQ $24, SI
	ADDQ $64, DI
	DECQ CX
	JMP  loop1

store:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y2, (DX)
	VMOVUPS Y3, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y4, (DX)
	VMOVUPS Y5, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y6, (DX)
	VMOVUPS Y7, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y8, (DX)
	VMOVUPS Y9, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y10, (DX)
	VMOVUPS Y11, 32(DX)
	VZEROUPPER
	RET

// One k step of kern6x16s: B's 16 floats at (DI), A's six at (SI),
// (SI)(R10*1), (SI)(R10*2), (BX), (BX)(R10*1), (BX)(R10*2) (BX is row 3),
// then every pointer moves one k on (R11 for A, R12 for B).
#define STEPS \
	VMOVUPS (DI), Y12; \
	VMOVUPS 32(DI), Y13; \
	VBROADCASTSS (SI), Y14; \
	VBROADCASTSS (SI)(R10*1), Y15; \
	VFMADD231PS Y12, Y14, Y0; \
	VFMADD231PS Y13, Y14, Y1; \
	VFMADD231PS Y12, Y15, Y2; \
	VFMADD231PS Y13, Y15, Y3; \
	VBROADCASTSS (SI)(R10*2), Y14; \
	VBROADCASTSS (BX), Y15; \
	VFMADD231PS Y12, Y14, Y4; \
	VFMADD231PS Y13, Y14, Y5; \
	VFMADD231PS Y12, Y15, Y6; \
	VFMADD231PS Y13, Y15, Y7; \
	VBROADCASTSS (BX)(R10*1), Y14; \
	VBROADCASTSS (BX)(R10*2), Y15; \
	VFMADD231PS Y12, Y14, Y8; \
	VFMADD231PS Y13, Y14, Y9; \
	VFMADD231PS Y12, Y15, Y10; \
	VFMADD231PS Y13, Y15, Y11; \
	ADDQ R11, SI; \
	ADDQ R11, BX; \
	ADDQ R12, DI

// ReLU on one accumulator at the store: +0 where it is < 0 (Y15 = 0).
#define RELU(y) \
	VCMPPS  $1, Y15, y, Y14; \
	VANDNPS y, Y14, y

// func kern6x16s(k int, a *float32, rs, ks int, b *float32, bs int, c *float32, ldc int, cin *float32, ldin int, flags int)
//
// kern6x16 with the operands read in place: A's element (r, q) at
// a[r*rs+q*ks] and B's 16 floats of step q at b[q*bs:], so an operand
// stored row-major (either way round for A) needs no packing. The chains
// are kern6x16's: for q = 0..k-1 in order c[r][j] = fma(A[r][q], B[q][j],
// c[r][j]), from cin[r*ldin+j] when flags&1 (C itself, or with ldin 0 a
// bias row for every r) and +0 otherwise; with flags&2 every element
// < 0 is stored as +0 (ReLU, a select).
TEXT ·kern6x16s(SB), NOSPLIT, $0-88
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ rs+16(FP), R10
	SHLQ $2, R10
	MOVQ ks+24(FP), R11
	SHLQ $2, R11
	MOVQ b+32(FP), DI
	MOVQ bs+40(FP), R12
	SHLQ $2, R12
	MOVQ c+48(FP), DX
	MOVQ ldc+56(FP), R8
	SHLQ $2, R8
	LEAQ (R10)(R10*2), BX
	ADDQ SI, BX
	MOVQ flags+80(FP), AX
	TESTQ $1, AX
	JZ   szero
	MOVQ cin+64(FP), R9
	MOVQ ldin+72(FP), R13
	SHLQ $2, R13
	VMOVUPS (R9), Y0
	VMOVUPS 32(R9), Y1
	ADDQ R13, R9
	VMOVUPS (R9), Y2
	VMOVUPS 32(R9), Y3
	ADDQ R13, R9
	VMOVUPS (R9), Y4
	VMOVUPS 32(R9), Y5
	ADDQ R13, R9
	VMOVUPS (R9), Y6
	VMOVUPS 32(R9), Y7
	ADDQ R13, R9
	VMOVUPS (R9), Y8
	VMOVUPS 32(R9), Y9
	ADDQ R13, R9
	VMOVUPS (R9), Y10
	VMOVUPS 32(R9), Y11
	JMP  sloop4

szero:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

sloop4:
	CMPQ CX, $4
	JLT  sloop1
	STEPS
	STEPS
	STEPS
	STEPS
	SUBQ $4, CX
	JMP  sloop4

sloop1:
	TESTQ CX, CX
	JZ   sstore
	STEPS
	DECQ CX
	JMP  sloop1

sstore:
	TESTQ $2, AX
	JZ   sput
	VXORPS Y15, Y15, Y15
	RELU(Y0)
	RELU(Y1)
	RELU(Y2)
	RELU(Y3)
	RELU(Y4)
	RELU(Y5)
	RELU(Y6)
	RELU(Y7)
	RELU(Y8)
	RELU(Y9)
	RELU(Y10)
	RELU(Y11)

sput:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y2, (DX)
	VMOVUPS Y3, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y4, (DX)
	VMOVUPS Y5, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y6, (DX)
	VMOVUPS Y7, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y8, (DX)
	VMOVUPS Y9, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y10, (DX)
	VMOVUPS Y11, 32(DX)
	VZEROUPPER
	RET
