package kerneltest

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/kernel/quant"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// convertFixture is three low-precision tables (INT4 packed with one state
// float, FP16 packed without state, INT2 emulated with one) of dim 13, so
// that codes straddle bytes, and 5 rows of each to convert.
type convertFixture struct {
	req    *kernel.ConvertRequest
	fp32   *region.Region
	values []*region.Region
	states []*region.Region
}

func newConvertFixture(t *testing.T, rounding quant.Rounding) *convertFixture {
	t.Helper()
	const dim, rows, n = 13, 40, 5
	f := &convertFixture{}
	mk := func(label string, size int64) *region.Region {
		r, err := region.Create(label, size)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	specs := []kernel.LowTable{
		{Rows: rows, Dim: dim, StateFloats: 1, Precision: quant.INT4},
		{Rows: rows, Dim: dim, Precision: quant.FP16},
		{Rows: rows, Dim: dim, StateFloats: 1, Precision: quant.INT2, Emulated: true},
	}
	T := len(specs)
	list := mk("kerneltest-rows", 8*int64(T*n))
	f.fp32 = mk("kerneltest-fp32", 4*int64(T*n*(dim+1)))
	req := &kernel.ConvertRequest{Rows: list.Ref(), FP32: f.fp32.Ref(), Rounding: rounding, Seed: 17, Batch: 5,
		RowStart: make([]int64, T), Counts: make([]int64, T), FP32Start: make([]int64, T)}
	ids := region.Int64s(list.Bytes())
	for ti, spec := range specs {
		v := mk("kerneltest-values", rows*int64(spec.RowBytes()))
		spec.Values = v.Ref()
		var st *region.Region
		if spec.StateFloats > 0 {
			st = mk("kerneltest-state", rows*int64(spec.StateFloats)*4)
			spec.State = st.Ref()
		}
		f.values, f.states = append(f.values, v), append(f.states, st)
		// Every row stored from an FP32 row of its own, as a table would.
		row := make([]float32, dim)
		for r := range int64(rows) {
			for e := range row {
				row[e] = float32(math.Sin(float64(r*31+int64(e)*7+int64(ti)))) * 0.3
			}
			key := quant.Key{Seed: 1, Table: ti, Row: r}
			if spec.Emulated {
				vals := region.Float32s(v.Bytes()[r*int64(spec.RowBytes()):])[:dim]
				copy(vals, row)
				quant.FakeQuantize(vals, spec.Precision, quant.Nearest, key)
			} else {
				quant.QuantizeRow(v.Bytes()[r*int64(spec.RowBytes()):], row, spec.Precision, quant.Nearest, key)
			}
		}
		if st != nil {
			for i, x := range region.Float32s(st.Bytes()) {
				region.Float32s(st.Bytes())[i] = x + float32(i)
			}
		}
		req.Tables = append(req.Tables, spec)
		req.RowStart[ti], req.Counts[ti] = int64(ti*n), n
		req.FP32Start[ti] = int64(ti * n * (dim + 1))
		copy(ids[ti*n:], []int64{3, 0, 39, 17, 3 + int64(ti)})
	}
	f.req = req
	return f
}

// snapshot copies every region the request names.
func (f *convertFixture) snapshot() [][]byte {
	out := [][]byte{slices.Clone(f.fp32.Bytes())}
	for i := range f.values {
		out = append(out, slices.Clone(f.values[i].Bytes()))
		if f.states[i] != nil {
			out = append(out, slices.Clone(f.states[i].Bytes()))
		}
	}
	return out
}

// runConvertContract checks Quantize and Dequantize bit for bit against
// the SDK's reference (kernel.Convert), and refusals; or ErrUnsupported
// where the kernel does not list them.
func runConvertContract(t *testing.T, ctx context.Context, ops []string, configured func(*testing.T) kernel.Kernel) {
	t.Run("Convert", func(t *testing.T) {
		q, ok := configured(t).(kernel.Quantizer)
		if !ok {
			t.Fatal("the gRPC client has no Quantize and Dequantize")
		}
		if !slices.Contains(ops, kernel.OpQuantize) || !slices.Contains(ops, kernel.OpDequantize) {
			f := newConvertFixture(t, quant.Nearest)
			if _, err := q.Dequantize(ctx, f.req); !errors.Is(err, plugin.ErrUnsupported) {
				t.Fatalf("Dequantize not in Info.Ops: err = %v, want plugin.ErrUnsupported", err)
			}
			return
		}
		for _, r := range []quant.Rounding{quant.Nearest, quant.Stochastic} {
			for _, quantize := range []bool{false, true} {
				f := newConvertFixture(t, r)
				if quantize { // FP32 rows to store: something off the grid
					for i := range region.Float32s(f.fp32.Bytes()) {
						region.Float32s(f.fp32.Bytes())[i] = float32(math.Cos(float64(i))) * 0.7
					}
				}
				before := f.snapshot()
				var m region.Mapper
				if _, err := kernel.Convert(&m, f.req, quantize); err != nil {
					t.Fatal(err)
				}
				m.Close()
				want := f.snapshot()
				restore(f, before)
				call := q.Dequantize
				if quantize {
					call = q.Quantize
				}
				res, err := call(ctx, f.req)
				if err != nil {
					t.Fatalf("%v quantize=%v: %v", r, quantize, err)
				}
				checkResult(t, res)
				for i, got := range f.snapshot() {
					if !bytes.Equal(got, want[i]) {
						t.Fatalf("%v quantize=%v: region %d differs from the reference conversion", r, quantize, i)
					}
				}
			}
		}
		f := newConvertFixture(t, quant.Nearest)
		bad := *f.req
		bad.Counts = []int64{1}
		if _, err := q.Dequantize(ctx, &bad); !errors.Is(err, plugin.ErrInvalidRequest) {
			t.Errorf("one count for three tables: %v, want ErrInvalidRequest", err)
		}
		bad = *f.req
		bad.Tables = slices.Clone(f.req.Tables)
		bad.Tables[0].Rows = 3 // row 39 is now outside
		if _, err := q.Quantize(ctx, &bad); !errors.Is(err, plugin.ErrInvalidRequest) {
			t.Errorf("row outside its table: %v, want ErrInvalidRequest", err)
		}
	})
}

// restore writes a snapshot back.
func restore(f *convertFixture, snap [][]byte) {
	i := 0
	copy(f.fp32.Bytes(), snap[i])
	for k := range f.values {
		i++
		copy(f.values[k].Bytes(), snap[i])
		if f.states[k] != nil {
			i++
			copy(f.states[k].Bytes(), snap[i])
		}
	}
}
