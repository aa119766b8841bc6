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
