//go:build amd64 && !purego

#include "textflag.h"

// Stochastic rounding, 8 elements at a time: the counter-based draws
// (quant.go's draw) and the two roundings that consume them. n is a
// multiple of 8 everywhere.

// MUL64(R, T1, T2, LO, HI): R = R·M mod 2^64 for the constant M whose low
// and high 32-bit halves are in every qword of LO and HI (AVX2 has no 64-bit
// multiply: lo·Mlo + (hi·Mlo + lo·Mhi)<<32).
#define MUL64(R, T1, T2, LO, HI) \
	VPMULUDQ LO, R, T1; \
	VPSRLQ $32, R, T2; \
	VPMULUDQ LO, T2, T2; \
	VPMULUDQ HI, R, R; \
	VPADDQ T2, R, R; \
	VPSLLQ $32, R, R; \
	VPADDQ T1, R, R

// MIX(R, T1, T2): R = splitmix64(R).
#define MIX(R, T1, T2) \
	VPADDQ Y14, R, R; \
	VPSRLQ $30, R, T1; \
	VPXOR T1, R, R; \
	MUL64(R, T1, T2, Y10, Y11); \
	VPSRLQ $27, R, T1; \
	VPXOR T1, R, R; \
	MUL64(R, T1, T2, Y12, Y13); \
	VPSRLQ $31, R, T1; \
	VPXOR T1, R, R

#define BCASTQ(C, Y) \
	MOVQ $C, AX; \
	MOVQ AX, X15; \
	VPBROADCASTQ X15, Y

// func drawsAVX2(u *uint32, start *uint64, n int)
//
// u[i] = uint32(splitmix64(start[i]+k·step)>>32) for i = 8k + j, j < 8,
// where start holds 8 counters and step is 8 elements' stride: the draws of
// consecutive elements of one row's stream.
TEXT ·drawsAVX2(SB), NOSPLIT, $0-24
	MOVQ u+0(FP), DI
	MOVQ start+8(FP), SI
	MOVQ n+16(FP), CX
	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y1
	BCASTQ(0x9e3779b97f4a7c15, Y14)
	BCASTQ(0x1ce4e5b9, Y10)
	BCASTQ(0xbf58476d, Y11)
	BCASTQ(0x133111eb, Y12)
	BCASTQ(0x94d049bb, Y13)
	BCASTQ(0x8daa51968c976818, Y9) // 8 · 0xd1b54a32d192ed03 mod 2^64
rloop:
	CMPQ CX, $8
	JLT  rdone
	VMOVDQA Y0, Y2
	VMOVDQA Y1, Y3
	MIX(Y2, Y4, Y5)
	MIX(Y3, Y6, Y7)
	// The high dwords of the 8 qwords, in element order.
	VSHUFPS $0xdd, Y3, Y2, Y2
	VPERMQ $0xd8, Y2, Y2
	VMOVDQU Y2, (DI)
	VPADDQ Y9, Y0, Y0
	VPADDQ Y9, Y1, Y1
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  rloop
rdone:
	VZEROUPPER
	RET

// func quantStochAVX2(codes *byte, x *float32, u *uint32, n int, s, b float32, bits int)
//
// Code(x[i], s, b, levels, Stochastic, u[i]) stored at bit i·bits (bits 8,
// 4 or 2), overwriting the bytes: t = clamp((x − b)/s, 0, levels) in FP32
// (a clamped t has no fraction, so it never rounds up, as Code returns the
// bound), then up iff float64(u)·2^-32 < t − ⌊t⌋, compared exactly in
// float64 (t − ⌊t⌋ is exact in FP32, u exact in float64).
TEXT ·quantStochAVX2(SB), NOSPLIT, $0-48
	MOVQ codes+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ u+16(FP), R8
	MOVQ n+24(FP), CX
	VBROADCASTSS s+32(FP), Y1
	VBROADCASTSS b+36(FP), Y2
	MOVQ bits+40(FP), DX
	VXORPS Y3, Y3, Y3
	CMPQ DX, $8
	JEQ  s8
	CMPQ DX, $4
	JEQ  s4
	MOVL $0x40400000, AX // 3.0
	VMOVDQU shiftS2<>(SB), Y12
	JMP  sgo
s4:
	MOVL $0x41700000, AX // 15.0
	VMOVDQU shiftS4<>(SB), Y12
	JMP  sgo
s8:
	MOVL $0x437f0000, AX // 255.0
sgo:
	MOVQ AX, X4
	VBROADCASTSS X4, Y4
	BCASTQ(0x41f0000000000000, Y13) // 2^32
	BCASTQ(0x4330000000000000, Y14) // 2^52, and its bits as a mask
sloop:
	CMPQ CX, $8
	JLT  sdone
	VMOVUPS (SI), Y0
	VSUBPS Y2, Y0, Y0
	VDIVPS Y1, Y0, Y0
	VMAXPS Y3, Y0, Y0
	VMINPS Y4, Y0, Y0
	VROUNDPS $1, Y0, Y5 // floor
	VSUBPS Y5, Y0, Y6   // the fraction, exact
	// Elements 0–3: u as float64 by the 2^52 trick, against frac·2^32.
	VCVTPS2PD X6, Y7
	VMULPD Y13, Y7, Y7
	VPMOVZXDQ (R8), Y8
	VPOR Y14, Y8, Y8
	VSUBPD Y14, Y8, Y8
	VCMPPD $1, Y7, Y8, Y8 // u < frac·2^32
	// Elements 4–7.
	VEXTRACTF128 $1, Y6, X9
	VCVTPS2PD X9, Y9
	VMULPD Y13, Y9, Y9
	VPMOVZXDQ 16(R8), Y10
	VPOR Y14, Y10, Y10
	VSUBPD Y14, Y10, Y10
	VCMPPD $1, Y9, Y10, Y10
	// The masks' low dwords, in element order; code = ⌊t⌋ − mask.
	VSHUFPS $0x88, Y10, Y8, Y8
	VPERMQ $0xd8, Y8, Y8
	VCVTTPS2DQ Y5, Y0
	VPSUBD Y8, Y0, Y0
	CMPQ DX, $8
	JNE  spackn
	VEXTRACTI128 $1, Y0, X5
	VPACKUSDW X5, X0, X0
	VPACKUSWB X0, X0, X0
	MOVQ X0, (DI)
	ADDQ $8, DI
	JMP  snext
spackn:
	VPSLLVD Y12, Y0, Y0
	VEXTRACTI128 $1, Y0, X5
	VPOR X5, X0, X0
	VPSHUFD $0x4e, X0, X5
	VPOR X5, X0, X0
	VPSHUFD $0xb1, X0, X5
	VPOR X5, X0, X0
	MOVQ X0, AX
	CMPQ DX, $4
	JNE  sst2
	MOVL AX, (DI)
	ADDQ $4, DI
	JMP  snext
sst2:
	MOVW AX, (DI)
	ADDQ $2, DI
snext:
	ADDQ $32, SI
	ADDQ $32, R8
	SUBQ $8, CX
	JMP  sloop
sdone:
	VZEROUPPER
	RET

DATA shiftS4<>+0(SB)/4, $0
DATA shiftS4<>+4(SB)/4, $4
DATA shiftS4<>+8(SB)/4, $8
DATA shiftS4<>+12(SB)/4, $12
DATA shiftS4<>+16(SB)/4, $16
DATA shiftS4<>+20(SB)/4, $20
DATA shiftS4<>+24(SB)/4, $24
DATA shiftS4<>+28(SB)/4, $28
GLOBL shiftS4<>(SB), RODATA|NOPTR, $32

DATA shiftS2<>+0(SB)/4, $0
DATA shiftS2<>+4(SB)/4, $2
DATA shiftS2<>+8(SB)/4, $4
DATA shiftS2<>+12(SB)/4, $6
DATA shiftS2<>+16(SB)/4, $8
DATA shiftS2<>+20(SB)/4, $10
DATA shiftS2<>+24(SB)/4, $12
DATA shiftS2<>+28(SB)/4, $14
GLOBL shiftS2<>(SB), RODATA|NOPTR, $32

#define BCASTD(C, Y) \
	MOVL $C, AX; \
	MOVQ AX, X15; \
	VPBROADCASTD X15, Y

// func toFP16StochAVX2(dst *uint16, src *float32, u *uint32, n int) int
//
// dst[i] = ToFP16(src[i], Stochastic, u[i]) for blocks of 8 whose every
// |src| is a normal binary16 below 65504 (2^-14 ≤ |x| < 0x477fe000's
// value): the code truncated, plus one iff u < (dropped 13 bits)·2^19,
// ToFP16's float64 comparison in integers. The first block with another
// value stops the loop; its index is returned (n when none).
TEXT ·toFP16StochAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ u+16(FP), R8
	MOVQ n+24(FP), CX
	XORQ BX, BX
	BCASTD(0x7fffffff, Y10)
	BCASTD(0x387fffff, Y11)
	BCASTD(0x477fe000, Y12)
	BCASTD(0x1c000, Y13)
	BCASTD(0x80000000, Y14)
	BCASTD(0x8000, Y9)
floop:
	CMPQ BX, CX
	JGE  fdone
	VMOVDQU (SI)(BX*4), Y0
	VPAND Y10, Y0, Y1
	VPCMPGTD Y11, Y1, Y2 // |x| > 0x387fffff
	VPCMPGTD Y1, Y12, Y3 // 0x477fe000 > |x|
	VPAND Y3, Y2, Y2
	VMOVMSKPS Y2, AX
	CMPL AX, $0xff
	JNE  fdone
	VPSRLD $13, Y1, Y4
	VPSUBD Y13, Y4, Y4 // the truncated code
	VPSLLD $19, Y1, Y5 // dropped bits · 2^19
	VMOVDQU (R8)(BX*4), Y6
	VPXOR Y14, Y6, Y6
	VPXOR Y14, Y5, Y5
	VPCMPGTD Y6, Y5, Y7 // unsigned u < dropped·2^19
	VPSUBD Y7, Y4, Y4
	VPSRLD $16, Y0, Y8
	VPAND Y9, Y8, Y8
	VPOR Y8, Y4, Y4
	VEXTRACTI128 $1, Y4, X5
	VPACKUSDW X5, X4, X4
	VMOVDQU X4, (DI)(BX*2)
	ADDQ $8, BX
	JMP  floop
fdone:
	MOVQ BX, ret+32(FP)
	VZEROUPPER
	RET

// func drawsAVX512(u *uint32, start *uint64, n int)
//
// drawsAVX2 with AVX-512's 64-bit multiply (VPMULLQ, AVX512DQ): the same
// draws, 8 lanes to a register and one instruction a multiply.
TEXT ·drawsAVX512(SB), NOSPLIT, $0-24
	MOVQ u+0(FP), DI
	MOVQ start+8(FP), SI
	MOVQ n+16(FP), CX
	VMOVDQU64 (SI), Z0
	MOVQ $0x9e3779b97f4a7c15, AX
	VPBROADCASTQ AX, Z14
	MOVQ $0xbf58476d1ce4e5b9, AX
	VPBROADCASTQ AX, Z12
	MOVQ $0x94d049bb133111eb, AX
	VPBROADCASTQ AX, Z13
	MOVQ $0x8daa51968c976818, AX // 8 · 0xd1b54a32d192ed03 mod 2^64
	VPBROADCASTQ AX, Z9
zloop:
	CMPQ CX, $8
	JLT  zdone
	VPADDQ Z14, Z0, Z2
	VPSRLQ $30, Z2, Z3
	VPXORQ Z3, Z2, Z2
	VPMULLQ Z12, Z2, Z2
	VPSRLQ $27, Z2, Z3
	VPXORQ Z3, Z2, Z2
	VPMULLQ Z13, Z2, Z2
	VPSRLQ $31, Z2, Z3
	VPXORQ Z3, Z2, Z2
	VPSRLQ $32, Z2, Z2
	VPMOVQD Z2, Y2
	VMOVDQU Y2, (DI)
	VPADDQ Z9, Z0, Z0
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  zloop
zdone:
	VZEROUPPER
	RET
