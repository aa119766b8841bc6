//go:build amd64 && !purego

#include "textflag.h"

// func prefetchRows(base *byte, rows *int64, n int, rowBytes int)
//
// Prefetches (T0) every cache line of rows rows[0:n] of a table whose row r
// starts at base + r·rowBytes: the conversions' random rows, a group
// ahead of the rows being converted.
TEXT ·prefetchRows(SB), NOSPLIT, $0-32
	MOVQ base+0(FP), SI
	MOVQ rows+8(FP), R8
	MOVQ n+16(FP), CX
	MOVQ rowBytes+24(FP), R9
prow:
	TESTQ CX, CX
	JLE  pdone
	MOVQ (R8), AX
	IMULQ R9, AX
	ADDQ SI, AX     // the row's first byte
	LEAQ -1(AX)(R9*1), DX // its last byte
	ANDQ $-64, AX
pline:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	CMPQ AX, DX
	JLE  pline
	ADDQ $8, R8
	DECQ CX
	JMP  prow
pdone:
	RET
