package batch

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/sdk/kernel/quant"
)

func newPrecTables(t *testing.T, rows []int64, dim, stride int, p Precision) *Tables {
	t.Helper()
	tabs, err := NewTablesPrecision(7, rows, dim, stride, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tabs.Close() })
	return tabs
}

// TestPackedMatchesEmulated drives packed and emulated tables of every
// precision and rounding through the same touches, reads and writes: every
// row reads back the same bits, and the digests agree.
func TestPackedMatchesEmulated(t *testing.T) {
	const dim, stride = 13, 14 // rowwise state, odd width: codes straddle bytes
	rows := []int64{50, 2000}  // table 0 under MinRows stays FP32
	for _, p := range []quant.Precision{quant.FP16, quant.INT8, quant.INT4, quant.INT2} {
		for _, r := range []quant.Rounding{quant.Nearest, quant.Stochastic} {
			packed := newPrecTables(t, rows, dim, stride, Precision{Precision: p, Rounding: r, MinRows: 1000})
			emu := newPrecTables(t, rows, dim, stride, Precision{Precision: p, Rounding: r, MinRows: 1000, Emulated: true})
			if !packed.Direct(0) || packed.Direct(1) || packed.PrecisionOf(1) != p {
				t.Fatalf("%v: table 0 (50 rows) must stay FP32 and table 1 be %v", p, p)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			src, a, b := make([]float32, stride), make([]float32, stride), make([]float32, stride)
			for step := range 500 {
				tab := rng.IntN(2)
				row := rng.Int64N(rows[tab])
				packed.ReadRow(tab, row, a)
				emu.ReadRow(tab, row, b)
				if !slices.Equal(a, b) {
					t.Fatalf("%v %v step %d: table %d row %d reads %v packed, %v emulated", p, r, step, tab, row, a, b)
				}
				for i := range src {
					src[i] = a[i] + float32(rng.NormFloat64()*0.01)
				}
				packed.WriteRow(tab, row, src, uint64(step))
				emu.WriteRow(tab, row, src, uint64(step))
			}
			if dp, de := packed.Digest(nil), emu.Digest(nil); dp != de {
				t.Fatalf("%v %v: packed digest %s, emulated %s", p, r, dp, de)
			}
		}
	}
}

// TestLowPrecisionRowsAreQuantized: a first touch stores the initial value
// quantized, the state stays FP32, and a written row lies on its own grid.
func TestLowPrecisionRowsAreQuantized(t *testing.T) {
	const dim, stride = 8, 16 // adagrad state
	tabs := newPrecTables(t, []int64{1000}, dim, stride, Precision{Precision: quant.INT4, MinRows: 1000})
	got := make([]float32, stride)
	tabs.ReadRow(0, 3, got)
	want := make([]float32, stride)
	InitRow(want[:dim], 7, 0, 3, float32(1/math.Sqrt(dim)))
	quant.FakeQuantize(want[:dim], quant.INT4, quant.Nearest, quant.Key{})
	if !slices.Equal(got, want) {
		t.Fatalf("first touch: %v, want the quantized initial row %v", got, want)
	}
	src := []float32{0, 1, 2, 3, 4, 5, 6, 7.4, 0.5, 0.25, 0.125, 1, 2, 3, 4, 5}
	tabs.WriteRow(0, 3, src, 9)
	tabs.ReadRow(0, 3, got)
	if !slices.Equal(got[dim:], src[dim:]) {
		t.Fatalf("optimizer state %v, want FP32 %v", got[dim:], src[dim:])
	}
	// s = 7.4/15: every value is b + q·s.
	for e, v := range got[:dim] {
		q := math.Round(float64(v) / (7.4 / 15))
		if math.Abs(float64(v)-q*7.4/15) > 1e-5 || q > 15 {
			t.Fatalf("element %d = %g is not on the INT4 grid", e, v)
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Row on a packed table did not panic")
		}
	}()
	tabs.Row(0, 3)
}

// TestInt4MemoryAtDim128 measures the tables' allocation: INT4 rows at dim
// 128 take at most 0.16 of FP32 (Eq. 3: 0.140625), and the factor results
// report says so three ways.
func TestInt4MemoryAtDim128(t *testing.T) {
	const dim, rows = 128, 20000
	fp := newPrecTables(t, []int64{rows}, dim, dim, Precision{})
	q := newPrecTables(t, []int64{rows}, dim, dim, Precision{Precision: quant.INT4, MinRows: 1000})
	ids := make([]int64, rows)
	for i := range ids {
		ids[i] = int64(i)
	}
	for _, tabs := range []*Tables{fp, q} {
		if err := tabs.Touch(0, ids); err != nil {
			t.Fatal(err)
		}
	}
	a, err := fp.AllocatedBytes()
	if err != nil {
		t.Fatal(err)
	}
	b, err := q.AllocatedBytes()
	if err != nil {
		t.Fatal(err)
	}
	ratio := float64(b) / float64(a)
	t.Logf("allocated: FP32 %d B, INT4 %d B, ratio %.4f (Eq. 3: 0.1406)", a, b, ratio)
	if ratio > 0.16 {
		t.Fatalf("INT4 tables take %.4f of FP32, want ≤ 0.16", ratio)
	}
	c, ok, err := q.Compression()
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if c.Eq3 != 0.140625 || c.Counted != 0.140625 || c.Measured > 0.16 {
		t.Fatalf("compression %+v, want Eq3 = Counted = 0.140625, Measured ≤ 0.16", c)
	}
	if _, ok, _ := fp.Compression(); ok {
		t.Fatal("FP32 tables report a compression")
	}
}

// TestKeepInitAndFlush: with KeepInit a touched, never-written row reads
// as its FP32 initial value and becomes low-precision at its first write;
// a flushed row reads (and hashes) as the FP32 row the cache held.
func TestKeepInitAndFlush(t *testing.T) {
	const dim, stride = 8, 9
	tabs := newPrecTables(t, []int64{1000}, dim, stride, Precision{Precision: quant.INT2, MinRows: 1000, KeepInit: true})
	if err := tabs.Touch(0, []int64{4, 5}); err != nil {
		t.Fatal(err)
	}
	got, want := make([]float32, stride), make([]float32, stride)
	InitRow(want[:dim], 7, 0, 4, float32(1/math.Sqrt(dim)))
	tabs.ReadRow(0, 4, got)
	if !tabs.Fresh(0, 4) || !slices.Equal(got, want) {
		t.Fatalf("fresh row reads %v, want its FP32 initial value %v", got, want)
	}
	tabs.WriteRow(0, 4, want, 3)
	tabs.ReadRow(0, 4, got)
	quant.FakeQuantize(want[:dim], quant.INT2, quant.Nearest, quant.Key{})
	if tabs.Fresh(0, 4) || !slices.Equal(got, want) {
		t.Fatalf("written row reads %v, want the INT2 row %v", got, want)
	}
	before := tabs.Digest(nil)
	fp := []float32{1.25, 2, 3, 4, 5, 6, 7, 8, 0.5}
	tabs.FlushRow(0, 5, fp)
	tabs.ReadRow(0, 5, got)
	if !slices.Equal(got, fp) {
		t.Fatalf("flushed row reads %v, want the cache's FP32 row %v", got, fp)
	}
	if tabs.Digest(nil) == before {
		t.Fatal("the digest does not see the flushed row")
	}
}
