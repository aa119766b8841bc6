package kernel

import (
	"context"
	"fmt"

	"github.com/flowrun/flowrun/sdk/kernel/quant"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
	"github.com/flowrun/flowrun/sdk/region/checked"
)

// The precision-conversion operators (mixed-precision embeddings, Sec. 3):
// Dequantize is the paper's up-conversion of fetch(T, i), Quantize the
// down-conversion of update(T, i, x).
const (
	OpQuantize   = "quantize"
	OpDequantize = "dequantize"
)

// LowTable is an embedding table stored below FP32 in regions: its values
// (Rows × quant.RowBytes(Precision, Dim) bytes, the packed row layout of
// sdk/kernel/quant; Rows × 4·Dim bytes of FP32 when Emulated) and its
// optimizer state apart (Rows × StateFloats float32s, FP32 always).
type LowTable struct {
	Values      region.Ref
	State       region.Ref
	Rows        int64
	Dim         int
	StateFloats int
	Precision   quant.Precision
	// Emulated tables hold the quantize-dequantized values as FP32 (the
	// paper's CPU emulation): the same numbers as packed ones.
	Emulated bool
}

// RowBytes is the bytes of one row of t's values.
func (t LowTable) RowBytes() int {
	if t.Emulated {
		return 4 * t.Dim
	}
	return quant.RowBytes(t.Precision, t.Dim)
}

// ConvertRequest moves rows between low-precision tables and FP32 rows.
// Table t's rows are entries [RowStart[t], RowStart[t]+Counts[t]) of Rows
// (int64 row numbers), and its FP32 rows, Dim+StateFloats floats each (the
// values, then the state: the layout of Table), start at float FP32Start[t]
// of FP32, in the same order. A table with Counts 0 is not read.
//
// Dequantize writes the FP32 rows; Quantize stores them, each row's values
// down-converted with Rounding and, when stochastic, draws keyed by (Seed,
// table, row, Batch, element) (quant.Key; the table is its index in
// Tables), so that every process and schedule stores the same bits.
type ConvertRequest struct {
	Tables    []LowTable
	Rows      region.Ref
	RowStart  []int64
	Counts    []int64
	FP32      region.Ref
	FP32Start []int64
	Rounding  quant.Rounding
	Seed      uint64
	Batch     uint64
}

// Quantizer is the optional capability of a kernel that converts rows
// (Info.Ops lists OpQuantize and OpDequantize). The gRPC client always
// has the methods; a plugin without them answers plugin.ErrUnsupported.
type Quantizer interface {
	Quantize(ctx context.Context, req *ConvertRequest) (*Result, error)
	Dequantize(ctx context.Context, req *ConvertRequest) (*Result, error)
}

// ConvertBlock is one table of a ConvertRequest, mapped and checked.
type ConvertBlock struct {
	Table  LowTable
	Values []byte
	State  []float32
	// Rows are the block's row numbers, each in [0, Table.Rows); FP32 has
	// len(Rows)·(Dim+StateFloats) floats.
	Rows []int64
	FP32 []float32
}

// View checks req and maps each table with rows to convert: one RowStart,
// Count and FP32Start a table; a table with rows has Dim ≥ 1,
// StateFloats ≥ 0, a precision below FP32 (or Emulated), its values and
// state regions long enough, every row in range; Rounding is known. Every
// error wraps plugin.ErrInvalidRequest. View writes nothing.
func (req *ConvertRequest) View(m *region.Mapper) ([]ConvertBlock, error) {
	if req == nil {
		return nil, fmt.Errorf("%w: nil convert request", plugin.ErrInvalidRequest)
	}
	n := len(req.Tables)
	if len(req.RowStart) != n || len(req.Counts) != n || len(req.FP32Start) != n {
		return nil, fmt.Errorf("%w: %d tables, %d row starts, %d counts, %d FP32 starts", plugin.ErrInvalidRequest, n, len(req.RowStart), len(req.Counts), len(req.FP32Start))
	}
	if req.Rounding != quant.Nearest && req.Rounding != quant.Stochastic {
		return nil, fmt.Errorf("%w: unknown rounding %d", plugin.ErrInvalidRequest, req.Rounding)
	}
	var blocks []ConvertBlock
	for t, tab := range req.Tables {
		c := req.Counts[t]
		if c == 0 {
			blocks = append(blocks, ConvertBlock{Table: tab})
			continue
		}
		b, err := viewConvertBlock(m, req, t, c)
		if err != nil {
			return nil, fmt.Errorf("%w: table %d: %w", plugin.ErrInvalidRequest, t, err)
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// viewConvertBlock checks and maps table t's block of c rows.
func viewConvertBlock(m *region.Mapper, req *ConvertRequest, t int, c int64) (ConvertBlock, error) {
	tab := req.Tables[t]
	b := ConvertBlock{Table: tab}
	switch {
	case c < 0 || req.RowStart[t] < 0 || req.FP32Start[t] < 0:
		return b, fmt.Errorf("negative count or start")
	case tab.Dim < 1 || tab.StateFloats < 0 || tab.Rows < 0:
		return b, fmt.Errorf("dim %d, state floats %d, rows %d", tab.Dim, tab.StateFloats, tab.Rows)
	case tab.Precision < quant.FP16 || tab.Precision > quant.INT2:
		return b, fmt.Errorf("precision %v is not a low precision", tab.Precision)
	}
	var err error
	if b.Values, err = checked.Bytes(m, tab.Values, tab.Rows*int64(tab.RowBytes()), "values"); err != nil {
		return b, err
	}
	if tab.StateFloats > 0 {
		if b.State, err = checked.Float32s(m, tab.State, tab.Rows*int64(tab.StateFloats), "state"); err != nil {
			return b, err
		}
	}
	rows, err := checked.Int64s(m, req.Rows, req.RowStart[t]+c, "rows")
	if err != nil {
		return b, err
	}
	b.Rows = rows[req.RowStart[t]:]
	for _, r := range b.Rows {
		if r < 0 || r >= tab.Rows {
			return b, fmt.Errorf("row %d outside [0, %d)", r, tab.Rows)
		}
	}
	stride := int64(tab.Dim + tab.StateFloats)
	fp, err := checked.Float32s(m, req.FP32, req.FP32Start[t]+c*stride, "fp32")
	if err != nil {
		return b, err
	}
	b.FP32 = fp[req.FP32Start[t]:]
	return b, nil
}

// Dequantize up-converts the block's rows into FP32 (values, then state)
// and counts the work: the reference every kernel must match bit for bit.
func (b *ConvertBlock) Dequantize() Result { return b.DequantizeWith(nil, quant.DequantizeRow) }

// DequantizeWith is Dequantize with before(i) called ahead of row i (a
// kernel's prefetch; nil for none) and each row's values converted by
// dequantize (quant.DequantizeRow, or a variant with its bits such as
// quant.DequantizeRowStream).
func (b *ConvertBlock) DequantizeWith(before func(i int), dequantize func(dst []float32, src []byte, p quant.Precision)) Result {
	t := b.Table
	rb, sf, stride := int64(t.RowBytes()), int64(t.StateFloats), t.Dim+t.StateFloats
	for i, r := range b.Rows {
		if before != nil {
			before(i)
		}
		dst := b.FP32[i*stride : (i+1)*stride]
		src := b.Values[r*rb : (r+1)*rb]
		if t.Emulated {
			copy(dst[:t.Dim], region.Float32s(src))
		} else {
			dequantize(dst[:t.Dim], src, t.Precision)
		}
		copy(dst[t.Dim:], b.State[r*sf:(r+1)*sf])
	}
	n := int64(len(b.Rows))
	return Result{BytesRead: n * (8 + rb + 4*sf), BytesWritten: n * 4 * int64(stride), FLOPs: 2 * n * int64(t.Dim)}
}

// Quantize stores the block's FP32 rows, values down-converted with
// rounding r and draws keyed by (seed, table, row, batch, element); the
// reference every kernel must match bit for bit.
func (b *ConvertBlock) Quantize(table int, r quant.Rounding, seed, batch uint64) Result {
	return b.QuantizeWith(table, r, seed, batch, nil)
}

// QuantizeWith is Quantize with before(i) called ahead of row i (a
// kernel's prefetch; nil for none).
func (b *ConvertBlock) QuantizeWith(table int, r quant.Rounding, seed, batch uint64, before func(i int)) Result {
	t := b.Table
	rb, sf, stride := int64(t.RowBytes()), int64(t.StateFloats), t.Dim+t.StateFloats
	for i, row := range b.Rows {
		if before != nil {
			before(i)
		}
		src := b.FP32[i*stride : (i+1)*stride]
		dst := b.Values[row*rb : (row+1)*rb]
		key := quant.Key{Seed: seed, Table: table, Row: row, Batch: batch}
		if t.Emulated {
			vals := region.Float32s(dst)
			copy(vals, src[:t.Dim])
			quant.FakeQuantize(vals, t.Precision, r, key)
		} else {
			quant.QuantizeRow(dst, src[:t.Dim], t.Precision, r, key)
		}
		copy(b.State[row*sf:(row+1)*sf], src[t.Dim:])
	}
	n := int64(len(b.Rows))
	return Result{BytesRead: n * (8 + 4*int64(stride)), BytesWritten: n * (rb + 4*sf), FLOPs: 4 * n * int64(t.Dim)}
}

// Add sums r into res.
func (res *Result) Add(r Result) {
	res.BytesRead += r.BytesRead
	res.BytesWritten += r.BytesWritten
	res.FLOPs += r.FLOPs
}

// Convert runs req in this process with the reference conversions
// (ConvertBlock.Quantize or Dequantize, table after table): for a host
// whose kernel does not have the operators, and for tests.
func Convert(m *region.Mapper, req *ConvertRequest, quantize bool) (*Result, error) {
	blocks, err := req.View(m)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	for t := range blocks {
		if quantize {
			res.Add(blocks[t].Quantize(t, req.Rounding, req.Seed, req.Batch))
		} else {
			res.Add(blocks[t].Dequantize())
		}
	}
	return res, nil
}
