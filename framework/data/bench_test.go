package data

import (
	"testing"

	"github.com/flowrun/flowrun/framework/config"
)

// ScratchPipe's default workload (Sec. V): 8 tables of ten million rows,
// batches of 2048 samples with 20 lookups per table.
func BenchmarkFillScratchPipe(b *testing.B) {
	for _, loc := range []string{"random", "low", "medium", "high", "zipf"} {
		b.Run(loc, func(b *testing.B) {
			d := config.Dataset{Kind: "synthetic", Batches: 1, BatchSize: 2048, Tables: 8, Rows: 10_000_000,
				Dim: 128, Lookups: 20, Locality: loc, ZipfS: 1.05, DenseFeatures: 13}
			s, err := NewSynthetic(1, d)
			if err != nil {
				b.Fatal(err)
			}
			a := Arrays{
				IDs:     make([]int64, d.Tables*d.BatchSize*d.Lookups),
				Offsets: make([]int64, d.Tables*(d.BatchSize+1)),
				Dense:   make([]float32, d.BatchSize*d.DenseFeatures),
				Labels:  make([]float32, d.BatchSize),
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := s.Fill(uint64(i), false, a); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
