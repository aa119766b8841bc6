package graph

import "testing"

func TestWorstCase(t *testing.T) {
	// ScratchPipe Sec. IV-D's example: 8 tables, 20 lookups, batch 2048,
	// dim 128, a window of 6 batches.
	w := WorstCase{Tables: 8, Lookups: 20, BatchSize: 2048, Dim: 128, Past: 3, Future: 2, TableRows: 10_000_000}
	if w.Window() != 6 || w.Rows() != 245760 || w.Bytes() != 960*(1<<20) {
		t.Errorf("window %d, rows %d, bytes %v", w.Window(), w.Rows(), w.Bytes())
	}
	if got, want := w.Formula(), "8 × 20 × 2048 × 128 × 4 B × 6 = 960 MiB"; got != want {
		t.Errorf("Formula() = %q, want %q", got, want)
	}
	// A table smaller than the window's lookups never has more distinct rows
	// than it has.
	w.TableRows = 100000
	if w.Rows() != 100000 {
		t.Errorf("rows %d, want the table's 100000", w.Rows())
	}
}
