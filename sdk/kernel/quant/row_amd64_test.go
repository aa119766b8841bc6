//go:build amd64 && !purego

package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAVX2MatchesGo: the AVX2 INT8 loops give the pure-Go loops' bits, on
// random rows of many widths (tails included), the constant-free edge
// cases (the maximum's clamp, ties, NaN elements) and values of every
// magnitude.
func TestAVX2MatchesGo(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 here")
	}
	defer func() { useAVX2 = true }()
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 3000 {
		dim := 1 + rng.IntN(140)
		x := randomRow(rng, dim)
		if trial%7 == 0 {
			x[rng.IntN(dim)] = float32(math.NaN())
		}
		if trial%11 == 0 && dim > 2 { // ties: s = 1
			x[0], x[1] = 0, 255
			for e := 2; e < dim; e++ {
				x[e] = float32(rng.IntN(255)) + 0.5
			}
		}
		var packed [2][]byte
		var back [2][]float32
		for i, avx := range []bool{false, true} {
			useAVX2 = avx
			packed[i] = make([]byte, RowBytes(INT8, dim))
			QuantizeRow(packed[i], x, INT8, Nearest, Key{})
			back[i] = make([]float32, dim)
			DequantizeRow(back[i], packed[i], INT8)
		}
		for e := range packed[0] {
			if packed[0][e] != packed[1][e] {
				t.Fatalf("trial %d dim %d: packed byte %d is %d in Go, %d with AVX2", trial, dim, e, packed[0][e], packed[1][e])
			}
		}
		for e := range back[0] {
			if math.Float32bits(back[0][e]) != math.Float32bits(back[1][e]) {
				t.Fatalf("trial %d dim %d: element %d reads %g in Go, %g with AVX2", trial, dim, e, back[0][e], back[1][e])
			}
		}
	}
}
