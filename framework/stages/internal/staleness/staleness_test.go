package staleness

import (
	"slices"
	"testing"
)

// Two batches sharing row 7, SGD-like updates of −1 (b−1) and −10 (b):
// b reads row 7 as it was before b−1's update, and after b's restore the
// row carries both updates (no update lost); row 9, only in b, is read
// live and left as the update made it.
func TestSwapRestoreIsDelayedUpdate(t *testing.T) {
	table := map[int64][]float32{7: {100, 1}, 9: {50, 2}, 3: {5, 5}}
	at := func(r *Row) []float32 { return table[r.ID] }
	var w Window
	prev := []Row{{ID: 7, Slot: -1}, {ID: 3, Slot: -1}}
	if n := w.Swap(prev, at); n != 0 {
		t.Fatalf("first batch read %d rows stale", n)
	}
	table[7][0] -= 1 // b−1's update
	table[3][0] -= 1
	Restore(prev, at)
	if table[7][0] != 99 {
		t.Fatalf("row 7 after b−1: %v", table[7])
	}
	cur := []Row{{ID: 7, Slot: -1}, {ID: 9, Slot: -1}}
	if n := w.Swap(cur, at); n != 1 {
		t.Fatalf("b read %d rows stale, want 1", n)
	}
	if !slices.Equal(table[7], []float32{100, 1}) || !slices.Equal(table[9], []float32{50, 2}) {
		t.Fatalf("b reads row 7 %v (want its value before b−1's update), row 9 %v (live)", table[7], table[9])
	}
	table[7][0] -= 10 // b's update, computed on the stale row
	table[9][0] -= 10
	Restore(cur, at)
	if table[7][0] != 89 || table[9][0] != 40 || table[3][0] != 4 {
		t.Errorf("after b: row 7 %v (want 89: both updates), row 9 %v (40), row 3 %v (4)", table[7], table[9], table[3])
	}
	if got := w.Share(); got != 0.25 {
		t.Errorf("stale share %v, want 1 of 4 distinct rows", got)
	}
	w.Forget()
	if n := w.Swap([]Row{{ID: 7, Slot: -1}}, at); n != 0 {
		t.Errorf("after Forget a batch read %d rows stale", n)
	}
}
