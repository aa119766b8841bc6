package data

import (
	"bytes"
	"path/filepath"

	"testing"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/data/datatest"
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
			a := NewArrays(d)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := s.Fill(uint64(i), false, a); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Converting Criteo Kaggle TSV: bytes of TSV per second (the Kaggle
// train.txt is 11 GB).
func BenchmarkConvertCriteo(b *testing.B) {
	var tsv bytes.Buffer
	if err := datatest.CriteoTSV(&tsv, 20000, 1); err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(b.TempDir(), "c.frb")
	b.SetBytes(int64(tsv.Len()))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ConvertCriteo(bytes.NewReader(tsv.Bytes()), "train.txt", out, ConvertOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// Reading a ScratchPipe-sized batch back from a batch file.
func BenchmarkFileFillScratchPipe(b *testing.B) {
	d := config.Dataset{Kind: "synthetic", Batches: 4, BatchSize: 2048, Tables: 8, Rows: 10_000_000,
		Dim: 128, Lookups: 20, Locality: "high", DenseFeatures: 13}
	path := filepath.Join(b.TempDir(), "s.frb")
	if _, err := WriteSynthetic(path, 1, d, nil); err != nil {
		b.Fatal(err)
	}
	f, err := Open(path, d)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	a := NewArrays(d)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := f.Fill(uint64(i%4), false, a); err != nil {
			b.Fatal(err)
		}
	}
}
