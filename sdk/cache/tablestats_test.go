package cache

import "testing"

// The per-distinct-row and hot counts cross gRPC with the per-lookup ones.
func TestTableStatsCrossGRPC(t *testing.T) {
	in := &PlanResult{Victims: 3, Tables: []TableStats{
		{Hits: 5, Misses: 2, Evictions: 1, DistinctHits: 3, DistinctMisses: 1, HotLookups: 2},
		{Misses: 1, DistinctMisses: 1},
	}}
	out := planResultFromPB(planResultToPB(in))
	if out.Victims != in.Victims || len(out.Tables) != len(in.Tables) {
		t.Fatalf("got %+v, want %+v", out, in)
	}
	for i := range in.Tables {
		if out.Tables[i] != in.Tables[i] {
			t.Errorf("table %d: got %+v, want %+v", i, out.Tables[i], in.Tables[i])
		}
	}
}
