package cachetest

import (
	"strings"
	"testing"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// The checks must catch broken policies, not only pass good ones.
func TestCheckPlanCatchesViolations(t *testing.T) {
	tabs := []plugin.Table{{Rows: 100, Dim: 4}}
	const capacity = 4
	ids := [][]int64{{10, 11, 10}}
	good := func() outcome {
		return outcome{
			slots:  [][]int64{{0, 1, 0}},
			hits:   [][]byte{{0, 0, 0}},
			result: &cache.PlanResult{Tables: []cache.TableStats{{Misses: 3}}},
		}
	}
	if errs := checkPlan(tabs, capacity, ids, good(), newResident(1)); len(errs) > 0 {
		t.Fatalf("good outcome rejected: %v", errs)
	}
	counted := good()
	counted.result.Tables[0].DistinctMisses, counted.result.Tables[0].HotLookups = 2, 2
	if errs := checkPlan(tabs, capacity, ids, counted, newResident(1)); len(errs) > 0 {
		t.Fatalf("good outcome with its distinct rows counted rejected: %v", errs)
	}

	cases := []struct {
		name   string
		break_ func(*outcome)
		want   string
	}{
		{"SlotBeyondCapacity", func(o *outcome) { o.slots[0][1] = capacity }, "outside [-1, 4)"},
		{"UnwrittenHit", func(o *outcome) { o.hits[0][1] = unwrittenHit }, "hit byte 7"},
		{"DuplicateGetsOtherSlot", func(o *outcome) { o.slots[0][2] = 2 }, "one row has one answer"},
		{"TwoRowsOneSlot", func(o *outcome) { o.slots[0][1] = 0 }, "given to rows 10 and 11"},
		{"CountsDoNotAddUp", func(o *outcome) { o.result.Tables[0].Misses = 2 }, "want 3 lookups"},
		{"StatsDisagreeWithBytes", func(o *outcome) {
			o.result.Tables[0] = cache.TableStats{Hits: 1, Misses: 2}
		}, "hit bytes say 0 / 3"},
		{"VictimsUncounted", func(o *outcome) {
			o.result.Victims = 1
			o.victims = [][3]int64{{0, 5, 3}}
		}, "evictions sum to 0"},
		{"VictimBadRow", func(o *outcome) {
			o.result.Victims = 1
			o.result.Tables[0].Evictions = 1
			o.victims = [][3]int64{{0, 500, 3}}
		}, "row 500 outside"},
		{"DistinctMiscounted", func(o *outcome) {
			o.result.Tables[0].DistinctHits, o.result.Tables[0].DistinctMisses = 0, 3
		}, "the answers have 2 distinct rows"},
		{"HotLookupsBeyondLookups", func(o *outcome) { o.result.Tables[0].HotLookups = 4 }, "4 hot lookups of 3"},
		{"NilResult", func(o *outcome) { o.result = nil }, "nil result"},
		{"MissingTableStats", func(o *outcome) { o.result.Tables = nil }, "stats for 0 tables"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := good()
			tc.break_(&o)
			assertCaught(t, checkPlan(tabs, capacity, ids, o, newResident(1)), tc.want)
		})
	}
}

func TestCheckPlanResidency(t *testing.T) {
	tabs := []plugin.Table{{Rows: 100, Dim: 4}}
	const capacity = 2
	first := outcome{
		slots:  [][]int64{{0, 1}},
		hits:   [][]byte{{0, 0}},
		result: &cache.PlanResult{Tables: []cache.TableStats{{Misses: 2}}},
	}
	start := func(t *testing.T) *resident {
		model := newResident(1)
		if errs := checkPlan(tabs, capacity, [][]int64{{10, 11}}, first, model); len(errs) > 0 {
			t.Fatal(errs)
		}
		return model
	}

	t.Run("ReportedEvictionIsFine", func(t *testing.T) {
		o := outcome{
			slots:   [][]int64{{0}},
			hits:    [][]byte{{0}},
			victims: [][3]int64{{0, 10, 0}},
			result:  &cache.PlanResult{Tables: []cache.TableStats{{Misses: 1, Evictions: 1}}, Victims: 1},
		}
		if errs := checkPlan(tabs, capacity, [][]int64{{12}}, o, start(t)); len(errs) > 0 {
			t.Fatal(errs)
		}
	})
	t.Run("SilentEviction", func(t *testing.T) {
		o := outcome{
			slots:  [][]int64{{0}},
			hits:   [][]byte{{0}},
			result: &cache.PlanResult{Tables: []cache.TableStats{{Misses: 1}}},
		}
		assertCaught(t, checkPlan(tabs, capacity, [][]int64{{12}}, o, start(t)), "while row 10 still holds it")
	})
	t.Run("ResidentRowMisses", func(t *testing.T) {
		o := outcome{
			slots:  [][]int64{{1}},
			hits:   [][]byte{{0}},
			result: &cache.PlanResult{Tables: []cache.TableStats{{Misses: 1}}},
		}
		assertCaught(t, checkPlan(tabs, capacity, [][]int64{{11}}, o, start(t)), "reported as a miss")
	})
	t.Run("ResidentRowMoved", func(t *testing.T) {
		o := outcome{
			slots:  [][]int64{{0}},
			hits:   [][]byte{{1}},
			result: &cache.PlanResult{Tables: []cache.TableStats{{Hits: 1}}},
		}
		assertCaught(t, checkPlan(tabs, capacity, [][]int64{{11}}, o, start(t)), "now given slot 0")
	})
	t.Run("VictimNotResident", func(t *testing.T) {
		o := outcome{
			slots:   [][]int64{{0}},
			hits:    [][]byte{{0}},
			victims: [][3]int64{{0, 11, 0}},
			result:  &cache.PlanResult{Tables: []cache.TableStats{{Misses: 1, Evictions: 1}}, Victims: 1},
		}
		assertCaught(t, checkPlan(tabs, capacity, [][]int64{{12}}, o, start(t)), "holds row 10")
	})
}

func assertCaught(t *testing.T, errs []error, want string) {
	t.Helper()
	for _, err := range errs {
		if strings.Contains(err.Error(), want) {
			return
		}
	}
	t.Errorf("no error mentions %q; got %v", want, errs)
}

// The window check must catch a policy that evicts what a pipelined host
// still needs.
func TestHoldCheckCatchesHazards(t *testing.T) {
	mk := func(seq uint64, ids []int64, slots []int64, victims ...[3]int64) (*batch, outcome) {
		b := &batch{ids: [][]int64{ids}, req: &cache.PlanRequest{Seq: seq}}
		return b, outcome{slots: [][]int64{slots}, victims: victims}
	}
	h := newHoldCheck(2)
	b1, o1 := mk(1, []int64{10, 11}, []int64{0, 1})
	if errs := h.check(b1, nil, o1); len(errs) > 0 {
		t.Fatal(errs)
	}
	// Batch 2 evicts slot 1, which batch 1 (one batch back) uses.
	b2, o2 := mk(2, []int64{12}, []int64{1}, [3]int64{0, 11, 1})
	assertCaught(t, h.check(b2, nil, o2), "which batch 1 uses")

	// Batch 3 evicts row 10, which future batch 4 looks up.
	h = newHoldCheck(0)
	b4, _ := mk(4, []int64{10}, nil)
	b3, o3 := mk(3, []int64{13}, []int64{0}, [3]int64{0, 10, 0})
	assertCaught(t, h.check(b3, []*batch{b4}, o3), "future batch 4")
}
