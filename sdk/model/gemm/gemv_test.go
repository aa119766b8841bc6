package gemm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The assembly gemv against its Go form: contiguous, gathered and
// transposed lanes, k below, at and past a multiple of 8.
func TestGemvBlockMatchesGemvGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, k := range []int{1, 2, 7, 8, 16, 33, 300} {
		for _, st := range [][3]int{{1, 40, 1}, {k + 3, 1, 5}, {3, 101, 2}, {1, 32, 7}, {40, 1, 1}, {17, 1, 3}} {
			rs, ks, vs := st[0], st[1], st[2]
			for _, lanes := range []int{8, 32} {
				a, v := fill(rng, (lanes-1)*rs+(k-1)*ks+1), fill(rng, (k-1)*vs+1)
				out := fill(rng, lanes)
				want := append([]float32(nil), out...)
				gemvGo(k, a, rs, ks, v, vs, want)
				gemvBlock(k, a, rs, ks, v, vs, out)
				for i := range out {
					if math.Float32bits(out[i]) != math.Float32bits(want[i]) {
						t.Fatalf("k %d strides %v lanes %d: out[%d] = %g, gemvGo %g (kernel %s)", k, st, lanes, i, out[i], want[i], Kernel())
					}
				}
			}
		}
	}
}

// The thin paths (and B read in place) on operands full of ±0, ±Inf, NaN, subnormals and
// values whose products cancel: the same bits as the contract (any NaN
// for a NaN: its payload is the hardware's).
func TestThinSpecialValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	specials := []float32{0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), 0x1p-140, -0x1p-149, 0x1p100, -0x1p100, 0x1.fffffep127, 3, -0.5}
	pick := func(n int) []float32 {
		xs := make([]float32, n)
		for i := range xs {
			xs[i] = specials[rng.IntN(len(specials))]
			if rng.IntN(3) == 0 {
				xs[i] = rng.Float32()*2 - 1
			}
		}
		return xs
	}
	for _, s := range [][3]int{{40, 1, 3}, {1, 40, 3}, {13, 1, 1}, {1, 11, 2}, {37, 1, 19}, {1, 37, 19}, {13, 16, 1}, {13, 72, 1},
		// B read in place, its partial panel running into the next row.
		{20, 13, 9}} {
		m, n, k := s[0], s[1], s[2]
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for _, acc := range []bool{false, true} {
					lda, ldb, ldc := k+1, n+2, n+3
					if tA {
						lda = m + 1
					}
					if tB {
						ldb = k + 2
					}
					a, b, c := pick(max(m, k)*lda+1), pick(max(n, k)*ldb+1), pick(m*ldc)
					want := append([]float32(nil), c...)
					reference(tA, tB, m, n, k, a, lda, b, ldb, acc, want, ldc)
					got := append([]float32(nil), c...)
					SgemmThreads(1, tA, tB, m, n, k, a, lda, b, ldb, acc, got, ldc)
					for i := range got {
						same := math.Float32bits(got[i]) == math.Float32bits(want[i]) ||
							got[i] != got[i] && want[i] != want[i]
						if !same {
							t.Fatalf("m n k %v transA %v transB %v acc %v: c[%d] = %g (%#x), want %g (%#x)",
								s, tA, tB, acc, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
						}
					}
				}
			}
		}
	}
}
