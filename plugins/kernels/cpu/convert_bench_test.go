package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/kernel/quant"
	"github.com/flowrun/flowrun/sdk/region"
	"golang.org/x/sys/unix"
)

// convertBlock is one table of `flowrun bench kernel --op quantize` at its
// default sizes but 2¹⁸ rows, in process memory.
func convertBlock(p quant.Precision, rows int) *kernel.ConvertBlock {
	const dim, n = 128, 2048 * 20
	t := kernel.LowTable{Rows: int64(rows), Dim: dim, Precision: p}
	rb := t.RowBytes()
	b := &kernel.ConvertBlock{Table: t, Values: hugeBytes(rows * rb), Rows: make([]int64, n), FP32: region.Float32s(hugeBytes(4 * n * dim))}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range b.FP32 {
		b.FP32[i] = rng.Float32()*2 - 1
	}
	for r := range int64(rows) {
		quant.QuantizeRow(b.Values[r*int64(rb):(r+1)*int64(rb)], b.FP32[:dim], p, quant.Nearest, quant.Key{Row: r})
		_ = r
	}
	for i := range b.Rows {
		b.Rows[i] = rng.Int64N(int64(rows))
	}
	return b
}

// hugeBytes is n bytes of anonymous memory advised to huge pages, as the
// bench command's regions are.
func hugeBytes(n int) []byte {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		panic(err)
	}
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	return b
}

// BenchmarkConvert: MB/s is the bytes the block reads and writes.
func BenchmarkConvert(b *testing.B) {
	for _, p := range []quant.Precision{quant.INT8, quant.INT4, quant.FP16} {
		for _, rows := range []int{1 << 18, 1 << 10} {
			blk := convertBlock(p, rows)
			for _, op := range []string{"dequantize", "quantize-nearest", "quantize-stochastic"} {
				for _, ahead := range []int{0, 16} {
					b.Run(fmt.Sprintf("%v/rows=%d/%s/ahead=%d", p, rows, op, ahead), func(b *testing.B) {
						call := func() kernel.Result {
							switch op {
							case "dequantize":
								return blk.Dequantize()
							case "quantize-nearest":
								return blk.Quantize(0, quant.Nearest, 1, 1)
							}
							return blk.Quantize(0, quant.Stochastic, 1, 1)
						}
						res := call()
						cpuMBps(b, res.BytesRead+res.BytesWritten, func() { call() })
					})
				}
			}
		}
	}
}
