package gemm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// specials mixes the values where a vector select could differ from the
// scalar branch: ±0, NaN, ±Inf, tiny and ordinary numbers of both signs.
func specials(rng *rand.Rand, n int) []float32 {
	pool := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-45, -1e-45}
	xs := make([]float32, n)
	for i := range xs {
		if rng.IntN(3) == 0 {
			xs[i] = pool[rng.IntN(len(pool))]
		} else {
			xs[i] = rng.Float32()*2 - 1
		}
	}
	return xs
}

func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: [%d] = %g (%#x), want %g (%#x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

func TestElementwiseMatchScalarLoops(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{0, 1, 7, 8, 9, 64, 203} {
		x := specials(rng, n)
		got, want := append([]float32(nil), x...), append([]float32(nil), x...)
		ReLU(got)
		for i, v := range want {
			if v < 0 {
				want[i] = 0
			}
		}
		sameBits(t, "ReLU", got, want)

		y := specials(rng, n)
		got, want = append([]float32(nil), x...), append([]float32(nil), x...)
		ReLUGrad(got, y)
		for i := range want {
			if !(y[i] > 0) {
				want[i] = 0
			}
		}
		sameBits(t, "ReLUGrad", got, want)

		got, want = append([]float32(nil), x...), append([]float32(nil), x...)
		AddTo(got, y)
		for i := range want {
			want[i] += y[i]
		}
		sameBits(t, "AddTo", got, want)

		for _, alpha := range []float32{0.37, -3, 0, float32(math.Inf(1))} {
			got, want = append([]float32(nil), x...), append([]float32(nil), x...)
			AddScaled(got, alpha, y)
			for i := range want {
				want[i] += float32(alpha * y[i])
			}
			sameBits(t, "AddScaled", got, want)
		}
	}
}

func TestDots4x8MatchesScalarLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, d := range []int{0, 1, 5, 16, 128} {
		v, vt := specials(rng, 4*d), specials(rng, 8*d)
		want := make([]float32, 32)
		for r := range 4 {
			for l := range 8 {
				var acc float32
				for k := range d {
					acc += float32(v[r*d+k] * vt[k*8+l])
				}
				want[r*8+l] = acc
			}
		}
		got := fill(rng, 32)
		Dots4x8(got, v, vt, d)
		sameBits(t, "Dots4x8", got, want)
	}
}
