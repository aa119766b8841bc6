package plankit

import (
	"math/rand/v2"
	"testing"
)

// TestRowIndexMatchesMap drives a RowIndex and a Go map with the same
// random puts, gets and deletes — clustered rows, so probe runs are long
// and wrap around — and compares every answer and the length, growing
// past the capacity it was made for.
func TestRowIndexMatchesMap(t *testing.T) {
	for _, spread := range []int64{64, 1000, 1 << 40} {
		rng := rand.New(rand.NewPCG(uint64(spread), 7))
		x := NewRowIndex(16)
		ref := map[int64]int32{}
		for step := 0; step < 200_000; step++ {
			row := rng.Int64N(spread)
			switch op := rng.IntN(10); {
			case op < 4:
				v := rng.Int32()
				x.Put(row, v)
				ref[row] = v
			case op < 7:
				x.Delete(row)
				delete(ref, row)
			default:
				got, ok := x.Get(row)
				want, wok := ref[row]
				if ok != wok || got != want {
					t.Fatalf("spread %d step %d: Get(%d) = %d,%v, want %d,%v", spread, step, row, got, ok, want, wok)
				}
			}
			if x.Len() != len(ref) {
				t.Fatalf("spread %d step %d: Len %d, want %d", spread, step, x.Len(), len(ref))
			}
		}
		for row, want := range ref {
			if got, ok := x.Get(row); !ok || got != want {
				t.Fatalf("spread %d: at the end Get(%d) = %d,%v, want %d", spread, row, got, ok, want)
			}
		}
		x.Clear()
		if _, ok := x.Get(0); ok || x.Len() != 0 {
			t.Fatalf("spread %d: Clear left rows", spread)
		}
	}
}
