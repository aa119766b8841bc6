// Package quant is the arithmetic of low-precision embedding rows
// (mixed-precision embeddings with a cache, Yang et al., Sec. 3 and
// Appendix A): row-wise min-max quantization to INT8/INT4/INT2 with an
// FP32 scale and bias per row, IEEE binary16 conversion, round-to-nearest-
// even and stochastic rounding from a counter-based generator, the packed
// row layout, and the memory compression factor of Eq. 2–3.
//
// It is public so that a kernel plugin, the host tables and a test can
// share one definition, bit for bit. It imports the standard library and
// golang.org/x/sys/cpu (the rows run through AVX2, F16C and AVX-512 loops
// where present, the same bits as the Go loops), and must not import
// framework/.
//
// Decisions the paper leaves open ([A] in the reading notes), fixed here:
//
//   - Float order: the code of an element is (x − b)/s as one FP32
//     subtraction then one FP32 division; a code dequantizes as q·s + b, an
//     FP32 multiply then an FP32 add, never fused (explicit conversions
//     forbid the FMA Go may emit on arm64 and GOAMD64=v3).
//   - Constant row (max == min, so s = 0): every code is 0, the row keeps
//     s = 0 and b = min, and dequantizes to exactly b: the row is unchanged
//     and no NaN or Inf appears.
//   - Clamping: codes are clamped to [0, 2^N − 1]. (x − b)/s can exceed
//     2^N − 1 by float error at the row's maximum, and a NaN element (which
//     training never stores; the train stage stops on a NaN loss) gets 0.
//   - Stochastic rounding draws one 32-bit uniform u per element from the
//     key (seed, table, row, batch, element) and rounds up iff u/2^32 <
//     frac: unbiased up to 2^-32 per element, and the same bits in any
//     process, on any schedule.
package quant

import (
	"fmt"
	"math"
	"strings"
)

// Precision is how a table stores its embedding values.
type Precision int32

const (
	// FP32 is the full-precision reference: no conversion.
	FP32 Precision = iota
	// FP16 is IEEE binary16, two bytes per value, no scale or bias.
	FP16
	// INT8, INT4 and INT2 are row-wise min-max quantization into
	// [0, 2^N − 1], with an FP32 scale and bias per row.
	INT8
	INT4
	INT2
)

var precisionNames = []string{FP32: "fp32", FP16: "fp16", INT8: "int8", INT4: "int4", INT2: "int2"}

// PrecisionNames are the precisions' names, as a graph spells them.
func PrecisionNames() []string { return append([]string(nil), precisionNames...) }

func (p Precision) String() string {
	if p >= 0 && int(p) < len(precisionNames) {
		return precisionNames[p]
	}
	return fmt.Sprintf("precision(%d)", int32(p))
}

// ParsePrecision reads a precision's name: fp32, fp16, int8, int4 or int2.
func ParsePrecision(s string) (Precision, error) {
	for p, name := range precisionNames {
		if strings.EqualFold(s, name) {
			return Precision(p), nil
		}
	}
	return 0, fmt.Errorf("unknown precision %q (want %s)", s, strings.Join(precisionNames, ", "))
}

// Bits is the bits of one stored value: 32, 16, 8, 4 or 2.
func (p Precision) Bits() int {
	switch p {
	case FP16:
		return 16
	case INT8:
		return 8
	case INT4:
		return 4
	case INT2:
		return 2
	}
	return 32
}

// Integer reports whether p is row-wise quantized (has a scale and bias).
func (p Precision) Integer() bool { return p == INT8 || p == INT4 || p == INT2 }

// Levels is the largest code, 2^N − 1 (0 for the float precisions).
func (p Precision) Levels() int {
	if !p.Integer() {
		return 0
	}
	return 1<<p.Bits() - 1
}

// Rounding is how a value between two representable neighbours is placed.
type Rounding int32

const (
	// Nearest takes the closer neighbour, ties to the even one.
	Nearest Rounding = iota
	// Stochastic takes the upper neighbour with probability equal to the
	// value's distance from the lower one over their gap: unbiased.
	Stochastic
)

var roundingNames = []string{Nearest: "nearest", Stochastic: "stochastic"}

// RoundingNames are the roundings' names, as a graph spells them.
func RoundingNames() []string { return append([]string(nil), roundingNames...) }

func (r Rounding) String() string {
	if r >= 0 && int(r) < len(roundingNames) {
		return roundingNames[r]
	}
	return fmt.Sprintf("rounding(%d)", int32(r))
}

// ParseRounding reads a rounding's name: nearest or stochastic.
func ParseRounding(s string) (Rounding, error) {
	for r, name := range roundingNames {
		if strings.EqualFold(s, name) {
			return Rounding(r), nil
		}
	}
	return 0, fmt.Errorf("unknown rounding %q (want %s)", s, strings.Join(roundingNames, " or "))
}

// Key names the stream of random draws of one row's down-conversion:
// element e of the row draws Key.Uniform(e). Batch is the sequence number
// of the batch whose write stores the row (InitBatch for the first touch).
type Key struct {
	Seed  uint64
	Table int
	Row   int64
	Batch uint64
}

// InitBatch is the Batch of a row's first down-conversion, when its
// initial FP32 value is stored at first touch; no batch has this number.
const InitBatch = math.MaxUint64

// splitmix64 is a good 64-bit hash of x (the finaliser of SplitMix64).
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// stream is the per-row state of the generator: each field of the key is
// hashed in turn, so that no two keys that differ in one field share a
// stream by a linear coincidence.
func (k Key) stream() uint64 {
	h := splitmix64(k.Seed ^ 0x6a09e667f3bcc908)
	h = splitmix64(h ^ uint64(int64(k.Table)))
	h = splitmix64(h ^ uint64(k.Row))
	return splitmix64(h ^ k.Batch)
}

// draw is element e's 32-bit uniform from a row's stream.
func draw(stream uint64, e int) uint32 {
	return uint32(splitmix64(stream+uint64(e)*drawStep) >> 32)
}

// Uniform is element e's draw: a uniform 32-bit integer.
func (k Key) Uniform(e int) uint32 { return draw(k.stream(), e) }

// roundUp decides stochastic rounding: true with probability frac (to
// within 2^-32), frac in [0, 1).
func roundUp(u uint32, frac float64) bool { return float64(u)*(1.0/(1<<32)) < frac }

// drawStep is the counter stride between a stream's consecutive elements.
const drawStep = 0xd1b54a32d192ed03
