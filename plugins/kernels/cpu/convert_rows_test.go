package cpu

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/kernel/quant"
	"github.com/flowrun/flowrun/sdk/region"
)

// TestConvertRowsMatchReference: the kernel's row loops (prefetching, and
// streaming stores once the output reaches streamBytes) give
// kernel.ConvertBlock's bits and counts, for every precision, packed and
// emulated, both roundings, with optimizer state, on a block large
// enough to stream and with repeated rows.
func TestConvertRowsMatchReference(t *testing.T) {
	const rows, dim, sf = 4096, 128, 1
	n := streamBytes/(4*(dim+sf)) + 37
	rng := rand.New(rand.NewPCG(21, 22))
	for _, p := range []quant.Precision{quant.FP16, quant.INT8, quant.INT4, quant.INT2} {
		for _, emulated := range []bool{false, true} {
			tab := kernel.LowTable{Rows: rows, Dim: dim, StateFloats: sf, Precision: p, Emulated: emulated}
			block := func() *kernel.ConvertBlock {
				b := &kernel.ConvertBlock{Table: tab, Values: make([]byte, rows*tab.RowBytes()), State: make([]float32, rows*sf), Rows: make([]int64, n), FP32: make([]float32, n*(dim+sf))}
				return b
			}
			ref, got := block(), block()
			for i := range ref.Values {
				ref.Values[i] = byte(rng.Uint32())
			}
			if emulated { // emulated values are FP32 numbers
				vals := region.Float32s(ref.Values)
				for i := range vals {
					vals[i] = rng.Float32()*2 - 1
				}
			}
			for i := range ref.Rows {
				ref.Rows[i] = rng.Int64N(rows)
			}
			for i := range ref.FP32 {
				ref.FP32[i] = rng.Float32()*4 - 2
			}
			copy(got.Values, ref.Values)
			copy(got.Rows, ref.Rows)
			copy(got.FP32, ref.FP32)
			if a, b := ref.Dequantize(), dequantizeRows(got, 16); a != b || !sameBits(ref.FP32, got.FP32) {
				t.Fatalf("%v emulated %v: dequantize differs from the reference (%+v, %+v)", p, emulated, a, b)
			}
			for i := range ref.FP32 {
				ref.FP32[i] = rng.Float32()*4 - 2
			}
			copy(got.FP32, ref.FP32)
			for _, r := range []quant.Rounding{quant.Nearest, quant.Stochastic} {
				if a, b := ref.Quantize(3, r, 7, 9), quantizeRows(got, 3, r, 7, 9, 16); a != b || !slices.Equal(ref.Values, got.Values) || !sameBits(ref.State, got.State) {
					t.Fatalf("%v emulated %v %v: quantize differs from the reference (%+v, %+v)", p, emulated, r, a, b)
				}
			}
		}
	}
}

func sameBits(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}
