package plankit

import (
	"math/rand/v2"
	"testing"

	"github.com/flowrun/flowrun/sdk/cache"
)

// fifoTable is the smallest Table: victims in insertion order, a slot
// used by the batch never evicted.
type fifoTable struct {
	Slots
	order []int32
	held  map[int32]bool
}

func (f *fifoTable) Hit(s int32) { f.held[s] = true }
func (f *fifoTable) Insert(s int32) {
	f.order = append(f.order, s)
	f.held[s] = true
}
func (f *fifoTable) Release() { clear(f.held) }
func (f *fifoTable) Victim() (int32, bool) {
	for i, s := range f.order {
		if !f.held[s] {
			f.order = append(f.order[:i], f.order[i+1:]...)
			return s, true
		}
	}
	return -1, false
}

// TwoPass counts each table's distinct rows by slot as Guard counts them
// from the hit bytes; where a row bypassed the cache it leaves both counts
// 0 for Guard.
func TestTwoPassDistinct(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, capacity := range []int32{2, 8, 64} {
		tables := []*fifoTable{}
		for range 2 {
			tables = append(tables, &fifoTable{Slots: NewSlots(capacity), held: map[int32]bool{}})
		}
		bypassed := false
		for batch := range 40 {
			n := 24
			b := &cache.Batch{IDs: make([]int64, 2*n), Slots: make([]int64, 2*n), Hits: make([]byte, 2*n),
				Victims: make([]int64, 6*n), Offsets: []int64{0, int64(n), int64(2 * n)}}
			for i := range b.IDs {
				b.IDs[i] = int64(rng.IntN(40))
			}
			res := TwoPass(b, tables)
			want := &cache.PlanResult{Tables: make([]cache.TableStats, 2)}
			var g Guard
			g.countDistinct(b, want)
			for tb, st := range res.Tables {
				w := want.Tables[tb]
				if st.DistinctHits == 0 && st.DistinctMisses == 0 {
					bypassed = true
					continue
				}
				if st.DistinctHits != w.DistinctHits || st.DistinctMisses != w.DistinctMisses {
					t.Fatalf("capacity %d batch %d table %d: %d/%d distinct hits/misses, the hit bytes say %d/%d",
						capacity, batch, tb, st.DistinctHits, st.DistinctMisses, w.DistinctHits, w.DistinctMisses)
				}
			}
		}
		if capacity == 2 && !bypassed {
			t.Errorf("capacity 2: no batch bypassed, the fallback is untested")
		}
	}
}
