//go:build amd64 && !purego

#include "textflag.h"

#define PREFETCH_AHEAD 8

// func applyAVX2(opt int, data *float32, rows *int64, n int, npf int, grads *float32, cols int, stride int, lines int, lr float32, eps float32)
//
// The optimizer step of optim.go (update.apply), for rows whose dim is a
// multiple of 8 (cols = dim): row rows[i] starts at data + rows[i]*stride
// bytes and receives grads[i*cols:(i+1)*cols]. Every operation rounds as
// the scalar code does (no FMA): SGD w -= lr*g; Adagrad G += g*g,
// w -= (lr*g) / (sqrt(G)+eps); row-wise Adagrad sums g*g in 8 lane
// partials, reduces them ((p0+p4)+(p2+p6)) + ((p1+p5)+(p3+p7)), divides by
// dim, then G += mean and w -= (lr*g) / (sqrt(G)+eps). While updating row i
// it prefetches (T0) the `lines` lines of row rows[i+PREFETCH_AHEAD], if
// i+PREFETCH_AHEAD < npf (npf ≥ n lets the prefetch run past the rows
// updated in this call, into the next call's).
TEXT ·applyAVX2(SB), NOSPLIT, $0-80
	MOVQ opt+0(FP), R9
	MOVQ data+8(FP), SI
	MOVQ rows+16(FP), R8
	MOVQ n+24(FP), CX
	MOVQ grads+40(FP), DI
	MOVQ cols+48(FP), R10
	SHLQ $2, R10 // row bytes
	MOVQ stride+56(FP), R11
	MOVQ lines+64(FP), R12
	VBROADCASTSS lr+72(FP), Y14
	VBROADCASTSS eps+76(FP), Y13
	XORQ R13, R13

row:
	CMPQ R13, CX
	JGE  done
	MOVQ R13, AX
	ADDQ $PREFETCH_AHEAD, AX
	CMPQ AX, npf+32(FP)
	JGE  update
	MOVQ (R8)(AX*8), AX
	IMULQ R11, AX
	ADDQ SI, AX
	MOVQ R12, R14
pf:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	DECQ R14
	JNZ  pf

update:
	MOVQ (R8)(R13*8), BX
	IMULQ R11, BX
	ADDQ SI, BX // the row
	XORQ DX, DX // byte offset in the row
	CMPQ R9, $1
	JEQ  adagrad
	CMPQ R9, $2
	JEQ  rowwise

sgd:
	CMPQ DX, R10
	JGE  next
	VMOVUPS (DI)(DX*1), Y0
	VMULPS Y14, Y0, Y0
	VMOVUPS (BX)(DX*1), Y1
	VSUBPS Y0, Y1, Y1
	VMOVUPS Y1, (BX)(DX*1)
	ADDQ $32, DX
	JMP  sgd

adagrad:
	LEAQ (BX)(R10*1), AX // the row's state
adagrad_loop:
	CMPQ DX, R10
	JGE  next
	VMOVUPS (DI)(DX*1), Y0
	VMULPS Y0, Y0, Y1
	VMOVUPS (AX)(DX*1), Y2
	VADDPS Y1, Y2, Y2
	VMOVUPS Y2, (AX)(DX*1)
	VSQRTPS Y2, Y2
	VADDPS Y13, Y2, Y2
	VMULPS Y14, Y0, Y0
	VDIVPS Y2, Y0, Y0
	VMOVUPS (BX)(DX*1), Y1
	VSUBPS Y0, Y1, Y1
	VMOVUPS Y1, (BX)(DX*1)
	ADDQ $32, DX
	JMP  adagrad_loop

rowwise:
	VXORPS Y3, Y3, Y3
rowwise_squares:
	CMPQ DX, R10
	JGE  rowwise_state
	VMOVUPS (DI)(DX*1), Y0
	VMULPS Y0, Y0, Y0
	VADDPS Y0, Y3, Y3
	ADDQ $32, DX
	JMP  rowwise_squares
rowwise_state:
	VEXTRACTF128 $1, Y3, X0
	VADDPS X0, X3, X3 // p[l] + p[l+4]
	VMOVHLPS X3, X0, X0
	VADDPS X0, X3, X3 // (p0+p4)+(p2+p6), (p1+p5)+(p3+p7)
	VMOVSHDUP X3, X0
	VADDSS X0, X3, X3
	MOVQ R10, AX
	SHRQ $2, AX
	VCVTSI2SSQ AX, X1, X1
	VDIVSS X1, X3, X3 // mean of the squares
	VMOVSS (BX)(R10*1), X1
	VADDSS X3, X1, X1
	VMOVSS X1, (BX)(R10*1) // G += mean
	VSQRTSS X1, X1, X1
	VADDSS X13, X1, X1
	VBROADCASTSS X1, Y15 // sqrt(G) + eps
	XORQ DX, DX
rowwise_update:
	CMPQ DX, R10
	JGE  next
	VMOVUPS (DI)(DX*1), Y0
	VMULPS Y14, Y0, Y0
	VDIVPS Y15, Y0, Y0
	VMOVUPS (BX)(DX*1), Y1
	VSUBPS Y0, Y1, Y1
	VMOVUPS Y1, (BX)(DX*1)
	ADDQ $32, DX
	JMP  rowwise_update

next:
	ADDQ R10, DI
	INCQ R13
	JMP  row

done:
	VZEROUPPER
	RET
