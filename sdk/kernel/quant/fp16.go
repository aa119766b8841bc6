package quant

import "math"

// IEEE 754 binary16 conversion. Decisions: NaN stays NaN (quiet, sign and
// the payload's top bits kept); ±Inf stays ±Inf; a finite value rounds to
// ±Inf when nearest rounding says so (|x| ≥ 65520); ±0 keeps its sign;
// subnormals down to 2^-24 are produced and read exactly. Stochastic
// rounding chooses between the two binary16 neighbours of x; beyond the
// largest finite value (65504), where the upper "neighbour" is Inf, it
// rounds as nearest does.

const (
	f16Inf     = 0x7c00
	f16MaxBits = 0x7bff // 65504
)

// f16Parts splits |f| into the binary16 code truncated toward zero and the
// dropped remainder as a fraction of one unit in the last place, in [0,1),
// for finite |f| < 65536. The fraction is exact in float64.
func f16Parts(f float32) (code uint16, frac float64) {
	bits := math.Float32bits(f) & 0x7fffffff
	exp := int(bits >> 23)
	man := bits & 0x7fffff
	e := exp - 127
	switch {
	case e >= -14: // normal binary16
		code = uint16(e+15)<<10 | uint16(man>>13)
		return code, float64(man&0x1fff) / (1 << 13)
	case e >= -24: // subnormal binary16, value m·2^(e-23) with m 24 bits
		m := man | 0x800000
		shift := uint(-e - 1) // 14..23
		return uint16(m >> shift), float64(m&(1<<shift-1)) / float64(uint32(1)<<shift)
	}
	// Below the smallest subnormal: the code is 0 and |f|/2^-24 the rest
	// (exact: |f| < 2^-24 and scaling by 2^24 is exact in float64).
	return 0, float64(math.Float32frombits(bits)) * (1 << 24)
}

// ToFP16 converts f to binary16 with rounding r; for Stochastic, u is the
// element's uniform draw (ignored by Nearest).
func ToFP16(f float32, r Rounding, u uint32) uint16 {
	bits := math.Float32bits(f)
	sign := uint16(bits>>16) & 0x8000
	abs := bits & 0x7fffffff
	switch {
	case abs > 0x7f800000: // NaN: quiet, top payload bits kept
		return sign | f16Inf | 0x200 | uint16((abs&0x7fffff)>>13)
	case abs >= 0x477ff000: // ≥ 65520 (and Inf): nearest gives Inf
		return sign | f16Inf
	}
	code, frac := f16Parts(f)
	if code >= f16MaxBits { // beyond 65504 but below 65520: nearest
		return sign | f16MaxBits
	}
	up := false
	if r == Stochastic {
		up = roundUp(u, frac)
	} else {
		up = frac > 0.5 || frac == 0.5 && code&1 == 1
	}
	if up {
		code++ // a carry into the exponent is the next binade, as it should be
	}
	return sign | code
}

// FromFP16 is the float32 value of a binary16 code (exact).
func FromFP16(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
	case man == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal: man·2^-24, exact in float32.
	v := float32(man) * (1.0 / (1 << 24))
	if sign != 0 {
		v = -v
	}
	return v
}
