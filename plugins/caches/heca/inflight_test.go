package heca_test

import (
	"slices"
	"testing"

	"github.com/flowrun/flowrun/plugins/caches/heca"
	"github.com/flowrun/flowrun/plugins/caches/internal/reftest"
)

// In a pipelined graph (the host's past window > 0) the batches still
// between plan and train are Algorithm 1's current batch too: their
// entries are never replaced, and a key one of them bypassed (trained in
// its host table) bypasses again rather than fill a slot from the host
// row before that update. Once a batch leaves the window its entries can
// be replaced again. Two entries, identity hash, past window 2.
func TestInFlightBatchesHeld(t *testing.T) {
	p := reftest.Configured(t, heca.New(), 1, `{"capacity": 2, "profile": "none", "hash": "identity", "past": 2}`, 1000)
	batches := [][]int64{
		{1, 2}, // fill: 2 → entry 0 (slot 0), 1 → entry 1 (slot 1)
		{3, 3}, // full; 1, 2 held by batch 0, in flight → 3 bypasses
		{3, 4}, // 3 was bypassed by batch 1, in flight → bypasses; 4: 1, 2 still held (batch 0 in flight) → bypasses
		{4, 4}, // batch 0 left the window, but 4 was bypassed by batch 2 → bypasses
		{5, 5}, // 5 → hash 1, entry 1 holds 1, no batch in flight uses it → replaced
		{1, 2}, // 2 hits (entry 0); 1 was replaced, entry 0 is CB's, entry 1 is batch 4's → bypasses
	}
	wantSlots := [][]int64{{1, 0}, {-1, -1}, {-1, -1}, {-1, -1}, {1, 1}, {-1, 0}}
	wantHits := [][]byte{{0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 1}}
	steps := reftest.PlanAll(t, p, 0, batches)
	var unique, uniqueHits int64
	for i, s := range steps {
		if s.Err != nil {
			t.Fatalf("batch %d: %v", i, s.Err)
		}
		reftest.Match(t, uint64(i), 0, s.P, batches[i], wantSlots[i], wantHits[i])
		st := s.Res.Tables[0]
		unique += st.DistinctHits + st.DistinctMisses
		uniqueHits += st.DistinctHits
		if want := int64(len(slices.Compact(slices.Clone(batches[i])))); st.DistinctHits+st.DistinctMisses != want {
			t.Errorf("batch %d: TableStats counts %d distinct rows, want %d", i, st.DistinctHits+st.DistinctMisses, want)
		}
	}
	c := p.(*heca.Policy).Counts()[0]
	if c.Evictions != 1 || c.Bypasses != 5 || c.Unique != unique || c.UniqueHits != uniqueHits || uniqueHits != 1 {
		t.Errorf("counts %+v (TableStats: %d unique, %d unique hits): want 1 eviction, 5 bypasses, 1 unique hit, the same unique counts", c, unique, uniqueHits)
	}
}
