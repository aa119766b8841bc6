package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func randomRow(rng *rand.Rand, dim int) []float32 {
	x := make([]float32, dim)
	scale := float32(math.Pow(10, rng.Float64()*6-4))
	for i := range x {
		x[i] = (2*rng.Float32() - 1) * scale
	}
	return x
}

// ulp is one unit in the last place of |v| in float32.
func ulp(v float32) float64 {
	a := math.Abs(float64(v))
	return float64(math.Nextafter32(float32(a), float32(math.Inf(1)))) - a
}

// TestQuantizationError checks every element against the paper's bounds:
// |x' − x| ≤ s/2 with nearest and < s with stochastic rounding, each plus
// the FP32 rounding of the code's division and of q·s + b (allowed: 2 ulp
// of the larger of |x| and |b|, and s·2^-22 for the quotient).
func TestQuantizationError(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range []Precision{INT8, INT4, INT2} {
		for _, r := range []Rounding{Nearest, Stochastic} {
			for trial := range 300 {
				dim := 1 + rng.IntN(130)
				x := randomRow(rng, dim)
				y := append([]float32(nil), x...)
				FakeQuantize(y, p, r, Key{Seed: 7, Table: 1, Row: int64(trial), Batch: 3})
				s, b := Params(x, p.Levels())
				for e := range x {
					err := math.Abs(float64(y[e]) - float64(x[e]))
					slack := 2*max(ulp(x[e]), ulp(b), ulp(y[e])) + float64(s)*math.Ldexp(1, -22)
					bound := float64(s) / 2
					if r == Stochastic {
						bound = float64(s)
					}
					if err > bound+slack || r == Stochastic && s > 0 && err >= bound+slack {
						t.Fatalf("%v %v dim %d elem %d: |%g − %g| = %g > bound %g (s %g)", p, r, dim, e, y[e], x[e], err, bound, s)
					}
				}
				for e, v := range x {
					if v == b && y[e] != b {
						t.Fatalf("%v %v: the row's minimum %g dequantizes to %g, want exactly b", p, r, b, y[e])
					}
				}
			}
		}
	}
}

func TestTiesToEven(t *testing.T) {
	// s = 1 exactly (range 3 over levels 3 for INT2; 255 for INT8), b = 0:
	// (v − b)/s is exactly v.
	x := []float32{0, 3, 0.5, 1.5, 2.5}
	FakeQuantize(x, INT2, Nearest, Key{})
	if want := []float32{0, 3, 0, 2, 2}; fmt.Sprint(x) != fmt.Sprint(want) {
		t.Fatalf("INT2 ties: got %v, want %v", x, want)
	}
	y := []float32{0, 255, 2.5, 3.5, 100.5, 101.5, 254.5}
	FakeQuantize(y, INT8, Nearest, Key{})
	if want := []float32{0, 255, 2, 4, 100, 102, 254}; fmt.Sprint(y) != fmt.Sprint(want) {
		t.Fatalf("INT8 ties: got %v, want %v", y, want)
	}
	// FP16: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: even is 1.
	// 1 + 3·2^-11 lies between 1+2^-10 (odd) and 1+2^-9 (even).
	if h := ToFP16(1+1.0/2048, Nearest, 0); h != 0x3c00 {
		t.Fatalf("FP16 tie 1+2^-11: got %#x, want 0x3c00", h)
	}
	if h := ToFP16(1+3.0/2048, Nearest, 0); h != 0x3c02 {
		t.Fatalf("FP16 tie 1+3·2^-11: got %#x, want 0x3c02", h)
	}
}

func TestConstantRowAndClamp(t *testing.T) {
	for _, p := range []Precision{INT8, INT4, INT2} {
		for _, r := range []Rounding{Nearest, Stochastic} {
			x := []float32{0.37, 0.37, 0.37}
			buf := make([]byte, RowBytes(p, len(x)))
			QuantizeRow(buf, x, p, r, Key{Seed: 1})
			y := make([]float32, len(x))
			DequantizeRow(y, buf, p)
			for e := range y {
				if y[e] != 0.37 {
					t.Fatalf("%v %v: constant row element %d became %g", p, r, e, y[e])
				}
			}
			if s, _ := Params(x, p.Levels()); s != 0 {
				t.Fatalf("%v: constant row has scale %g, want 0", p, s)
			}
			// The maximum's quotient may exceed the top code by float error;
			// it is clamped, and codes never leave [0, levels].
			for trial := range 1000 {
				row := randomRow(rand.New(rand.NewPCG(uint64(trial), 9)), 17)
				s, b := Params(row, p.Levels())
				for e, v := range row {
					q := Code(v, s, b, p.Levels(), r, Key{Row: int64(trial)}.Uniform(e))
					if int(q) > p.Levels() {
						t.Fatalf("%v: code %d above %d", p, q, p.Levels())
					}
				}
			}
			nan := []float32{1, float32(math.NaN()), 2}
			FakeQuantize(nan, p, r, Key{})
			if nan[1] != 1 {
				t.Fatalf("%v: a NaN element gets code 0 (the row's minimum), got %g", p, nan[1])
			}
		}
	}
}

func TestFP16Known(t *testing.T) {
	for _, c := range []struct {
		in   float32
		want uint16
	}{
		{1, 0x3c00}, {-2, 0xc000}, {1.0 / 3, 0x3555}, {65504, 0x7bff}, {65519.996, 0x7bff},
		{65520, 0x7c00}, {float32(math.Inf(-1)), 0xfc00}, {1e10, 0x7c00},
		{0x1p-24, 0x0001}, {0x1p-25, 0x0000}, {0x1.8p-25, 0x0001}, {0x1p-14, 0x0400},
		{0x1.ff8p-15, 0x03ff}, {0x1.ffcp-15, 0x0400}, {float32(math.Copysign(0, -1)), 0x8000}, {0x1p-30, 0},
	} {
		if got := ToFP16(c.in, Nearest, 0); got != c.want {
			t.Errorf("ToFP16(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	if got := FromFP16(0x3555); got != 0.333251953125 {
		t.Errorf("FromFP16(0x3555) = %v, want 0.333251953125", got)
	}
	if got := FromFP16(0x8001); got != -0x1p-24 {
		t.Errorf("FromFP16(0x8001) = %v, want -2^-24", got)
	}
	if h := ToFP16(float32(math.NaN()), Nearest, 0); h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
		t.Errorf("NaN → %#04x, want a NaN", h)
	}
	if !math.IsNaN(float64(FromFP16(0x7e00))) {
		t.Error("FromFP16(0x7e00) is not NaN")
	}
}

// TestFP16Exhaustive checks every finite binary16 value: it converts back
// exactly, and the float32s just below, at and just above the midpoint to
// the next value round as round-to-nearest-even says.
func TestFP16Exhaustive(t *testing.T) {
	for h := uint16(0); h < 0x7bff; h++ {
		for _, sign := range []uint16{0, 0x8000} {
			lo, hi := FromFP16(h|sign), FromFP16((h+1)|sign)
			if got := ToFP16(lo, Nearest, 0); got != h|sign {
				t.Fatalf("round trip of %#04x gives %#04x", h|sign, got)
			}
			mid := float32((float64(lo) + float64(hi)) / 2) // exact: 12 significant bits
			even := h | sign
			if h&1 == 1 {
				even = (h + 1) | sign
			}
			toward, away := float32(0), float32(math.Inf(1))
			if sign != 0 {
				away = float32(math.Inf(-1))
			}
			if got := ToFP16(mid, Nearest, 0); got != even {
				t.Fatalf("midpoint of %#04x: got %#04x, want %#04x", h|sign, got, even)
			}
			if got := ToFP16(math.Nextafter32(mid, toward), Nearest, 0); got != h|sign {
				t.Fatalf("below midpoint of %#04x: got %#04x", h|sign, got)
			}
			if got := ToFP16(math.Nextafter32(mid, away), Nearest, 0); got != (h+1)|sign {
				t.Fatalf("above midpoint of %#04x: got %#04x", h|sign, got)
			}
			// Stochastic rounding returns only the two neighbours.
			for _, u := range []uint32{0, 1 << 31, math.MaxUint32} {
				if got := ToFP16(mid, Stochastic, u); got != h|sign && got != (h+1)|sign {
					t.Fatalf("stochastic at %g: %#04x is not a neighbour", mid, got)
				}
			}
		}
	}
}

// TestStochasticUnbiased draws M = 10^5 stochastic roundings of fixed
// values (one key per draw: batch = draw number) and checks the mean of the
// rounded values and the frequency of rounding up. A fair rounding fails a
// 4.5σ two-sided bound with probability about 7·10^-6 per check (normal
// approximation of the binomial); with 12 checks the false-alarm rate of
// the test is below 10^-4, and the fixed seed makes it deterministic.
func TestStochasticUnbiased(t *testing.T) {
	const M = 100000
	row := []float32{0, 0.3, 0.123456, 0.7 + 1.0/3, 1}
	for _, p := range []Precision{INT8, INT4, INT2} {
		s, b := Params(row, p.Levels())
		for e := 1; e <= 3; e++ {
			tq := float64(float32(float32(row[e]-b) / s))
			frac := tq - math.Floor(tq)
			var sum float64
			ups := 0
			for n := range M {
				q := Code(row[e], s, b, p.Levels(), Stochastic, Key{Seed: 42, Table: 3, Row: 9, Batch: uint64(n)}.Uniform(e))
				sum += float64(q)
				if float64(q) > tq {
					ups++
				}
			}
			sigma := math.Sqrt(frac * (1 - frac) / M)
			if d := math.Abs(sum/M - tq); d > 4.5*sigma+1e-9 {
				t.Errorf("%v element %d: mean code %g, want %g (|Δ| %g > 4.5σ = %g)", p, e, sum/M, tq, d, 4.5*sigma)
			}
			if d := math.Abs(float64(ups)/M - frac); d > 4.5*sigma+1e-9 {
				t.Errorf("%v element %d: P(up) %g, want %g", p, e, float64(ups)/M, frac)
			}
		}
	}
	// FP16: 1 + 2^-12 is a quarter of the way from 1 to 1 + 2^-10.
	x := float32(1 + 1.0/4096)
	var sum float64
	for n := range M {
		sum += float64(FromFP16(ToFP16(x, Stochastic, Key{Seed: 5, Batch: uint64(n)}.Uniform(0))))
	}
	sigma := math.Sqrt(0.25*0.75/M) / 1024
	if d := math.Abs(sum/M - float64(x)); d > 4.5*sigma {
		t.Errorf("FP16 stochastic mean %g, want %g (|Δ| %g > 4.5σ = %g)", sum/M, x, d, 4.5*sigma)
	}
}

// TestPackedMatchesFake: storing a row packed and reading it back gives the
// bits of FakeQuantize, for every precision, rounding and width.
func TestPackedMatchesFake(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, p := range []Precision{FP32, FP16, INT8, INT4, INT2} {
		for _, r := range []Rounding{Nearest, Stochastic} {
			for dim := 1; dim <= 70; dim++ {
				x := randomRow(rng, dim)
				key := Key{Seed: 11, Table: dim, Row: 5, Batch: 6}
				buf := make([]byte, RowBytes(p, dim))
				QuantizeRow(buf, x, p, r, key)
				got := make([]float32, dim)
				DequantizeRow(got, buf, p)
				FakeQuantize(x, p, r, key)
				for e := range x {
					if math.Float32bits(got[e]) != math.Float32bits(x[e]) {
						t.Fatalf("%v %v dim %d elem %d: packed %g, fake %g", p, r, dim, e, got[e], x[e])
					}
				}
			}
		}
	}
	if RowBytes(INT4, 128) != 72 || RowBytes(INT2, 128) != 40 || RowBytes(INT8, 128) != 136 || RowBytes(FP16, 128) != 256 {
		t.Fatal("row bytes at dim 128 differ from Eq. 3")
	}
}

// TestKeyStreams pins the generator: a change to it changes every
// stochastic run's digest, so it must be deliberate.
func TestKeyStreams(t *testing.T) {
	k := Key{Seed: 1, Table: 2, Row: 3, Batch: 4}
	got := []uint32{k.Uniform(0), k.Uniform(1), Key{Seed: 1, Table: 2, Row: 3, Batch: 5}.Uniform(0)}
	want := []uint32{0x92986c3d, 0x84b89d5b, 0x3eb6d7ba}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("draws %#x, pinned %#x: the generator changed", got, want)
		}
	}
}

// round5 rounds half away from zero at the fifth decimal, as Table 11
// prints (0.265625 → 0.26563; Go's %.5f would give 0.26562, ties to even).
func round5(f float64) float64 { return math.Round(f*1e5) / 1e5 }

// TestTable11 prints Appendix A's Table 11 from CompressionFactor, the
// function results.json's memory_compression uses, and checks its ten
// factors to five decimals (D = 128, LFU: a counter per row with a cache).
func TestTable11(t *testing.T) {
	rows := []struct {
		p     Precision
		cache float64
		want  float64
	}{
		{INT8, 0, 0.26563}, {INT4, 0, 0.14063}, {INT2, 0, 0.07813},
		{INT4, 0.3, 0.45078}, {INT8, 0.1, 0.37422}, {INT8, 0.05, 0.32383},
		{INT4, 0.1, 0.24922}, {INT4, 0.05, 0.19883}, {INT2, 0.1, 0.18672}, {INT2, 0.05, 0.13633},
	}
	t.Log("bitwidth  cache  compression factor (Table 11, D = 128, LFU)")
	for _, r := range rows {
		f := CompressionFactor(r.p, 128, Cache{Fraction: r.cache, Counters: r.cache > 0})
		t.Logf("%8d  %5.2f  %.5f", r.p.Bits(), r.cache, round5(f))
		if round5(f) != r.want {
			t.Errorf("%v cache %.2f: factor %.7f rounds to %.5f, Table 11 says %.5f", r.p, r.cache, f, round5(f), r.want)
		}
	}
	if f := CompressionFactor(FP16, 128, Cache{}); f != 0.5 {
		t.Errorf("FP16 without cache: %g, want 0.5 (Sec. 4.3.3)", f)
	}
	if f := CompressionFactor(INT8, 128, Cache{}); f != 0.265625 {
		t.Errorf("INT8 without cache: %g, want 0.265625", f)
	}
}
