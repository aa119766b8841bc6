package plankit

import (
	"testing"

	"github.com/flowrun/flowrun/sdk/cache"
)

// The guard counts each distinct row of a table once, a hit when its
// lookups hit, unless the policy filled the counts itself.
func TestCountDistinct(t *testing.T) {
	b := &cache.Batch{
		IDs:     []int64{5, 5, 7, 9, 7, 1, 1},
		Hits:    []byte{1, 1, 0, 1, 0, 0, 0},
		Offsets: []int64{0, 5, 7},
	}
	res := &cache.PlanResult{Tables: []cache.TableStats{{}, {DistinctHits: 4, DistinctMisses: 2}}}
	var g Guard
	g.countDistinct(b, res)
	if st := res.Tables[0]; st.DistinctHits != 2 || st.DistinctMisses != 1 {
		t.Errorf("table 0: %+v, want 2 distinct hits (5, 9) and 1 miss (7)", st)
	}
	if st := res.Tables[1]; st.DistinctHits != 4 || st.DistinctMisses != 2 {
		t.Errorf("table 1: %+v, the policy's own counts were overwritten", st)
	}
}
