package cpu

import (
	"context"
	"fmt"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/region"
)

// Quantize stores FP32 rows into low-precision tables (sdk/kernel
// ConvertBlock.Quantize: row-wise min-max or binary16, nearest or
// stochastic with counter-based draws), tables in parallel when the
// request's regions are apart: each row's bits depend only on the row and
// its key, never on the order of the work.
func (k *cpuKernel) Quantize(ctx context.Context, req *kernel.ConvertRequest) (*kernel.Result, error) {
	return k.convert(ctx, req, kernel.OpQuantize, func(t int, b *kernel.ConvertBlock, ahead int) kernel.Result {
		return quantizeRows(b, t, req.Rounding, req.Seed, req.Batch, ahead)
	})
}

// Dequantize up-converts rows of low-precision tables into FP32 rows.
func (k *cpuKernel) Dequantize(ctx context.Context, req *kernel.ConvertRequest) (*kernel.Result, error) {
	return k.convert(ctx, req, kernel.OpDequantize, func(_ int, b *kernel.ConvertBlock, ahead int) kernel.Result {
		return dequantizeRows(b, ahead)
	})
}

func (k *cpuKernel) convert(ctx context.Context, req *kernel.ConvertRequest, op string, fn func(int, *kernel.ConvertBlock, int) kernel.Result) (*kernel.Result, error) {
	cfg, err := k.begin(ctx, req == nil, op)
	if err != nil {
		return nil, err
	}
	blocks, err := req.View(&k.mapper)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	var writes, reads []region.Ref
	for _, t := range req.Tables {
		writes = append(writes, t.Values, t.State)
	}
	if op == kernel.OpDequantize {
		writes, reads = []region.Ref{req.FP32}, append(writes, req.Rows)
	} else {
		reads = []region.Ref{req.FP32, req.Rows}
	}
	results := make([]kernel.Result, len(blocks))
	forEachTable(len(blocks), cfg.workers(), disjoint(nonZero(writes), nonZero(reads)), func(t int) {
		results[t] = fn(t, &blocks[t], cfg.convertAhead())
	})
	return sum(results, 0), nil
}

// nonZero drops absent refs (a table without state has none).
func nonZero(refs []region.Ref) []region.Ref {
	out := refs[:0:0]
	for _, r := range refs {
		if !r.IsZero() {
			out = append(out, r)
		}
	}
	return out
}

var _ kernel.Quantizer = (*cpuKernel)(nil)
