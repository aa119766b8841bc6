// Package convert is the scratch a stage converts a batch's rows of
// low-precision host tables through (embedding.precision below FP32): two
// regions — the rows' numbers and their FP32 values — named in one
// kernel.ConvertRequest per batch, sent to the kernel plugin's Quantize or
// Dequantize (batch-granular, the kernel's own row loop), or answered by
// the SDK's reference conversion in this process when the kernel lacks
// the operators. collect reads missed rows up-converted through it; insert
// writes victims back down-converted.
//
// It imports only sdk/; stage kinds share it instead of importing each
// other.
package convert

import (
	"context"
	"errors"
	"fmt"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// Scratch is a stage's conversion regions, made on the first batch that
// needs them. The zero value is ready; Close removes what was made.
type Scratch struct {
	rows, fp32 *region.Region
	capacity   int64 // rows the regions hold
	stride     int64 // floats a row
	mapper     region.Mapper
	noConvert  bool // the kernel answered ErrUnsupported once
}

// Request returns a request for tables (every table's RowStart, Counts
// and FP32Start zero, to be filled) on the scratch's regions, making them
// on first need with room for capacity rows of stride floats named after
// name ("collect-missed": "collect-missed-ids", "collect-missed-rows").
func (s *Scratch) Request(name string, tables []kernel.LowTable, capacity, stride int64) (*kernel.ConvertRequest, error) {
	if s.rows == nil {
		var err error
		if s.rows, err = region.Create(name+"-ids", max(8*capacity, 64)); err != nil {
			return nil, fmt.Errorf("%s scratch: %w", name, err)
		}
		if s.fp32, err = region.Create(name+"-rows", max(4*capacity*stride, 64)); err != nil {
			return nil, fmt.Errorf("%s scratch: %w", name, err)
		}
		s.capacity, s.stride = capacity, stride
	}
	n := len(tables)
	return &kernel.ConvertRequest{Tables: tables, Rows: s.rows.Ref(), FP32: s.fp32.Ref(),
		RowStart: make([]int64, n), Counts: make([]int64, n), FP32Start: make([]int64, n)}, nil
}

// Place sets table t's span of req to count rows from row at, checking
// that they fit the scratch (what names the rows in the error: "missed
// rows", "victims").
func (s *Scratch) Place(req *kernel.ConvertRequest, seq uint64, t int, at, count int64, what string) error {
	if at+count > s.capacity {
		return fmt.Errorf("batch %d: %d %s, the scratch holds %d", seq, at+count, what, s.capacity)
	}
	req.RowStart[t], req.Counts[t], req.FP32Start[t] = at, count, at*s.stride
	return nil
}

// IDs is the rows' numbers region; Rows their FP32 values, stride floats
// a row.
func (s *Scratch) IDs() []int64    { return region.Int64s(s.rows.Bytes()) }
func (s *Scratch) Rows() []float32 { return region.Float32s(s.fp32.Bytes()) }

// Convert makes req's call on k — Quantize when quantize is true, else
// Dequantize — or, for a kernel without the operator, the SDK's
// reference conversion in this process (and from then on without asking
// the kernel again).
func (s *Scratch) Convert(ctx context.Context, k kernel.Kernel, req *kernel.ConvertRequest, quantize bool) error {
	if q, ok := k.(kernel.Quantizer); ok && !s.noConvert {
		var err error
		if quantize {
			_, err = q.Quantize(ctx, req)
		} else {
			_, err = q.Dequantize(ctx, req)
		}
		if !errors.Is(err, plugin.ErrUnsupported) {
			return err
		}
		s.noConvert = true
	}
	_, err := kernel.Convert(&s.mapper, req, quantize)
	return err
}

// Close removes the regions and unmaps what the in-process conversion
// mapped.
func (s *Scratch) Close() error {
	var errs []error
	for _, r := range []*region.Region{s.rows, s.fp32} {
		if r != nil {
			errs = append(errs, r.Close())
		}
	}
	return errors.Join(append(errs, s.mapper.Close())...)
}
