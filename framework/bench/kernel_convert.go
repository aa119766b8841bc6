package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/kernel/quant"
	"github.com/flowrun/flowrun/sdk/region"
)

// convertOp reports whether op is one of the precision conversions, which
// run on low-precision tables (kernel.LowTable) instead of FP32 ones.
func convertOp(op string) bool { return op == kernel.OpQuantize || op == kernel.OpDequantize }

// buildConvert replaces the FP32 tables by low-precision ones of c's
// precision (every row stored from random FP32 values) and lays out the
// request: each table's rows are its batch's lookups as drawn (a batch's
// rows, duplicates and all), with an FP32 row each.
func (s *kernelSetup) buildConvert(c KernelConfig, indices []int64) error {
	p, err := quant.ParsePrecision(c.Precision)
	if err != nil || p == quant.FP32 {
		return fmt.Errorf("--precision: want fp16, int8, int4 or int2, got %q", c.Precision)
	}
	r, err := quant.ParseRounding(c.Rounding)
	if err != nil {
		return fmt.Errorf("--rounding: %w", err)
	}
	per := int64(c.Batch) * int64(c.Lookups)
	n := int64(c.Tables) * per
	rowsR, err := s.alloc("convert-rows", 8*n)
	if err != nil {
		return err
	}
	copy(region.Int64s(rowsR.Bytes()), indices)
	fp, err := s.alloc("convert-fp32", 4*n*int64(c.Dim))
	if err != nil {
		return err
	}
	fillFloats(region.Float32s(fp.Bytes()), c.Seed^0xf32, 1)
	req := &kernel.ConvertRequest{Rows: rowsR.Ref(), FP32: fp.Ref(), Rounding: r, Seed: c.Seed, Batch: 1}
	for t := range c.Tables {
		lt := kernel.LowTable{Rows: c.Rows, Dim: c.Dim, Precision: p}
		v, err := s.alloc(fmt.Sprintf("lowtable%d", t), c.Rows*int64(lt.RowBytes()))
		if err != nil {
			return err
		}
		if c.HugePages {
			if err := v.AdviseHugePages(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
				return err
			}
		}
		lt.Values = v.Ref()
		s.lowTables = append(s.lowTables, v)
		req.Tables = append(req.Tables, lt)
		req.RowStart = append(req.RowStart, int64(t)*per)
		req.Counts = append(req.Counts, per)
		req.FP32Start = append(req.FP32Start, int64(t)*per*int64(c.Dim))
	}
	var wg sync.WaitGroup
	for t := range c.Tables {
		wg.Go(func() { fillLow(s.lowTables[t].Bytes(), req.Tables[t], c.Seed+uint64(t)) })
	}
	wg.Wait()
	s.convert = req
	return nil
}

// fillLow stores random rows into a low-precision table.
func fillLow(values []byte, lt kernel.LowTable, seed uint64) {
	row := make([]float32, lt.Dim)
	rb := int64(lt.RowBytes())
	for r := range lt.Rows {
		fillFloats(row, seed*0x100000001b3+uint64(r), 1)
		quant.QuantizeRow(values[r*rb:(r+1)*rb], row, lt.Precision, quant.Nearest, quant.Key{})
	}
}

// callConvert makes one conversion call.
func (s *kernelSetup) callConvert(ctx context.Context, k kernel.Kernel, op string) (*kernel.Result, error) {
	q, ok := k.(kernel.Quantizer)
	if !ok {
		return nil, fmt.Errorf("the kernel has no %s operator", op)
	}
	if op == kernel.OpQuantize {
		return q.Quantize(ctx, s.convert)
	}
	return q.Dequantize(ctx, s.convert)
}

// measureAgainstCopy is measure for the conversions, each repetition
// followed by a STREAM copy on the same threads; both medians are kept.
// The copy's arrays hold as many bytes as the call moved (read and
// written), and at least streamMinBytes each, STREAM's rule that the
// arrays outsize the caches, so that the limit is memory's.
func (res *KernelResult) measureAgainstCopy(call func() (*kernel.Result, []int64, error)) error {
	r, _, err := call()
	if err != nil {
		return fmt.Errorf("%s: %w", res.Op, err)
	}
	half := max((r.BytesRead+r.BytesWritten)/2, streamMinBytes) / 8 * 8
	src, dst := make([]byte, half), make([]byte, half)
	fillFloats(region.Float32s(src), 3, 1)
	copyOnce := func() { streamCopy(dst, src, res.Threads) }
	var copies []float64
	timed := func() (*kernel.Result, []int64, error) {
		out, counts, err := call()
		copies = append(copies, timeIt(copyOnce))
		return out, counts, err
	}
	if err := res.measure(timed); err != nil {
		return fmt.Errorf("%s: %w", res.Op, err)
	}
	copies = copies[len(copies)-res.Reps:] // the timed repetitions' copies
	slices.Sort(copies)
	res.StreamCopyGBps = float64(2*half) / median(copies) / 1e9
	res.StreamRatio = res.TrafficGBps / res.StreamCopyGBps
	return nil
}

// streamMinBytes is the least size of each STREAM array: several times
// the last-level cache of current server parts (a variable so that tests
// can run small).
var streamMinBytes int64 = 256 << 20

// streamCopy is STREAM's copy kernel, dst = src, split over threads.
func streamCopy(dst, src []byte, threads int) {
	chunk := (len(src)/max(threads, 1) + 63) &^ 63
	var wg sync.WaitGroup
	for lo := 0; lo < len(src); lo += chunk {
		hi := min(lo+chunk, len(src))
		wg.Go(func() { copy(dst[lo:hi], src[lo:hi]) })
	}
	wg.Wait()
}

// timeIt is the wall seconds fn takes.
func timeIt(fn func()) float64 {
	start := time.Now()
	fn()
	return time.Since(start).Seconds()
}
