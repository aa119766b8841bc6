// The three column blocks below differ only in their accumulator count;
// keep them alike.

//go:build amd64 && !purego

#include "textflag.h"

// func poolBagAVX2(out *float32, data *float32, bag *int64, n int, pf *int64, npf int, cols int, stride int, lines int, div float32)
//
// out[0:cols] = Σ_{i<n} row(bag[i])[0:cols], each element accumulated from
// +0 in bag order (vertical adds only, so every element sees the same
// sequence of float32 additions as the scalar loop), then divided by div
// when div ≠ 0. Row r starts at data + r*stride bytes; cols is a multiple of
// 8. Before summing lookup i of the first column block it prefetches (T0)
// the `lines` cache lines of row pf[i], for i < npf.
//
// Columns go in blocks of 128 floats (16 accumulators), then 32, then 8.
TEXT ·poolBagAVX2(SB), NOSPLIT, $0-76
	MOVQ out+0(FP), DI
	MOVQ data+8(FP), SI
	MOVQ bag+16(FP), R8
	MOVQ n+24(FP), CX
	MOVQ pf+32(FP), R9
	MOVQ npf+40(FP), DX
	MOVQ cols+48(FP), R10
	SHLQ $2, R10 // column bytes
	MOVQ stride+56(FP), R11
	MOVQ lines+64(FP), R12
	XORQ BX, BX // byte offset of the current column block

b128:
	MOVQ R10, AX
	SUBQ BX, AX
	CMPQ AX, $512
	JLT  b32
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
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15
	XORQ R13, R13
b128_row:
	CMPQ R13, CX
	JGE  b128_store
	CMPQ R13, DX
	JGE  b128_add
	MOVQ (R9)(R13*8), AX
	IMULQ R11, AX
	ADDQ SI, AX
	MOVQ R12, R14
b128_pf:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	DECQ R14
	JNZ  b128_pf
b128_add:
	MOVQ (R8)(R13*8), AX
	IMULQ R11, AX
	ADDQ SI, AX
	VADDPS 0(AX)(BX*1), Y0, Y0
	VADDPS 32(AX)(BX*1), Y1, Y1
	VADDPS 64(AX)(BX*1), Y2, Y2
	VADDPS 96(AX)(BX*1), Y3, Y3
	VADDPS 128(AX)(BX*1), Y4, Y4
	VADDPS 160(AX)(BX*1), Y5, Y5
	VADDPS 192(AX)(BX*1), Y6, Y6
	VADDPS 224(AX)(BX*1), Y7, Y7
	VADDPS 256(AX)(BX*1), Y8, Y8
	VADDPS 288(AX)(BX*1), Y9, Y9
	VADDPS 320(AX)(BX*1), Y10, Y10
	VADDPS 352(AX)(BX*1), Y11, Y11
	VADDPS 384(AX)(BX*1), Y12, Y12
	VADDPS 416(AX)(BX*1), Y13, Y13
	VADDPS 448(AX)(BX*1), Y14, Y14
	VADDPS 480(AX)(BX*1), Y15, Y15
	INCQ R13
	JMP  b128_row
b128_store:
	VMOVUPS Y0, 0(DI)(BX*1)
	VMOVUPS Y1, 32(DI)(BX*1)
	VMOVUPS Y2, 64(DI)(BX*1)
	VMOVUPS Y3, 96(DI)(BX*1)
	VMOVUPS Y4, 128(DI)(BX*1)
	VMOVUPS Y5, 160(DI)(BX*1)
	VMOVUPS Y6, 192(DI)(BX*1)
	VMOVUPS Y7, 224(DI)(BX*1)
	VMOVUPS Y8, 256(DI)(BX*1)
	VMOVUPS Y9, 288(DI)(BX*1)
	VMOVUPS Y10, 320(DI)(BX*1)
	VMOVUPS Y11, 352(DI)(BX*1)
	VMOVUPS Y12, 384(DI)(BX*1)
	VMOVUPS Y13, 416(DI)(BX*1)
	VMOVUPS Y14, 448(DI)(BX*1)
	VMOVUPS Y15, 480(DI)(BX*1)
	XORQ DX, DX // prefetch in the first column block only
	ADDQ $512, BX
	JMP  b128
b32:
	MOVQ R10, AX
	SUBQ BX, AX
	CMPQ AX, $128
	JLT  b8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ R13, R13
b32_row:
	CMPQ R13, CX
	JGE  b32_store
	CMPQ R13, DX
	JGE  b32_add
	MOVQ (R9)(R13*8), AX
	IMULQ R11, AX
	ADDQ SI, AX
	MOVQ R12, R14
b32_pf:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	DECQ R14
	JNZ  b32_pf
b32_add:
	MOVQ (R8)(R13*8), AX
	IMULQ R11, AX
	ADDQ SI, AX
	VADDPS 0(AX)(BX*1), Y0, Y0
	VADDPS 32(AX)(BX*1), Y1, Y1
	VADDPS 64(AX)(BX*1), Y2, Y2
	VADDPS 96(AX)(BX*1), Y3, Y3
	INCQ R13
	JMP  b32_row
b32_store:
	VMOVUPS Y0, 0(DI)(BX*1)
	VMOVUPS Y1, 32(DI)(BX*1)
	VMOVUPS Y2, 64(DI)(BX*1)
	VMOVUPS Y3, 96(DI)(BX*1)
	XORQ DX, DX // prefetch in the first column block only
	ADDQ $128, BX
	JMP  b32
b8:
	MOVQ R10, AX
	SUBQ BX, AX
	CMPQ AX, $32
	JLT  divide
	VXORPS Y0, Y0, Y0
	XORQ R13, R13
b8_row:
	CMPQ R13, CX
	JGE  b8_store
	CMPQ R13, DX
	JGE  b8_add
	MOVQ (R9)(R13*8), AX
	IMULQ R11, AX
	ADDQ SI, AX
	MOVQ R12, R14
b8_pf:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	DECQ R14
	JNZ  b8_pf
b8_add:
	MOVQ (R8)(R13*8), AX
	IMULQ R11, AX
	ADDQ SI, AX
	VADDPS 0(AX)(BX*1), Y0, Y0
	INCQ R13
	JMP  b8_row
b8_store:
	VMOVUPS Y0, 0(DI)(BX*1)
	XORQ DX, DX // prefetch in the first column block only
	ADDQ $32, BX
	JMP  b8
divide:
	MOVL div+72(FP), AX
	TESTL AX, AX
	JZ   done
	VBROADCASTSS div+72(FP), Y15
	XORQ BX, BX
divloop:
	CMPQ BX, R10
	JGE  done
	VMOVUPS (DI)(BX*1), Y0
	VDIVPS Y15, Y0, Y0
	VMOVUPS Y0, (DI)(BX*1)
	ADDQ $32, BX
	JMP  divloop
done:
	VZEROUPPER
	RET
