package hazard

import (
	"math/rand/v2"
	"testing"
)

// rowMap against a Go map under random inserts, updates and deletes,
// with keys chosen to collide.
func TestRowMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var m rowMap
	ref := map[int64]int32{}
	for i := range 200000 {
		k := int64(r.IntN(3000)) << (r.IntN(3) * 20) // clustered and spread keys
		switch r.IntN(3) {
		case 0, 1:
			v := int32(i + 1)
			m.set(k, v)
			ref[k] = v
		case 2:
			m.del(k)
			delete(ref, k)
		}
		if i%997 == 0 {
			for k, v := range ref {
				if got := m.get(k); got != v {
					t.Fatalf("step %d: get(%d) = %d, want %d", i, k, got, v)
				}
			}
		}
		if got := m.get(k); got != ref[k] {
			t.Fatalf("step %d: get(%d) = %d, want %d", i, k, got, ref[k])
		}
		if m.n != len(ref) {
			t.Fatalf("step %d: %d entries, want %d", i, m.n, len(ref))
		}
	}
	for k := range ref {
		m.del(k)
	}
	for i, c := range m.cells {
		if c.val != 0 {
			t.Fatalf("cell %d still holds %d after deleting every key", i, c.key)
		}
	}
	if m.get(-5) != 0 {
		t.Fatal("absent key found")
	}
}
