package lfu

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/flowrun/flowrun/plugins/caches/internal/reftest"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
	"github.com/flowrun/flowrun/sdk/plugin"
)

func configured(t *testing.T, capacity int64, rows ...int64) cache.Cache {
	t.Helper()
	return reftest.Configured(t, New(), 0, fmt.Sprintf(`{"capacity":%d,"future":2}`, capacity), rows...)
}

func plan(t *testing.T, c cache.Cache, a *cachetest.Arena, seq uint64, ids ...[]int64) (*cachetest.Plan, *cache.PlanResult) {
	t.Helper()
	return a.Planned(t, c, seq, ids...)
}

func TestEvictsLeastFrequentThenLeastRecent(t *testing.T) {
	c := configured(t, 3, 100)
	a := cachetest.NewArena(t, 1<<16)
	// Row 1 is looked up three times, 2 and 3 once each (3 after 2).
	plan(t, c, a, 1, []int64{1, 2, 1, 3, 1})
	// 4 evicts 2: counts 1:3, 2:1, 3:1, and 2 was used before 3.
	p, res := plan(t, c, a, 2, []int64{4})
	if got := p.Victims(res.Victims); !reflect.DeepEqual(got, []cachetest.Victim{{Table: 0, Row: 2, Slot: 1}}) {
		t.Fatalf("victims %v, want row 2 from slot 1", got)
	}
	if got := p.Slots(0); !reflect.DeepEqual(got, []int64{1}) {
		t.Fatalf("slots %v", got)
	}
	// 3 and 4 now both count 1; 3 is older, so 5 evicts it, not 1.
	p, res = plan(t, c, a, 3, []int64{5})
	if got := p.Victims(res.Victims); !reflect.DeepEqual(got, []cachetest.Victim{{Table: 0, Row: 3, Slot: 2}}) {
		t.Fatalf("victims %v, want row 3 from slot 2", got)
	}
	// A batch of more distinct rows than slots keeps its hits and bypasses
	// the excess.
	p, res = plan(t, c, a, 4, []int64{1, 6, 7, 5, 4})
	if got := p.Slots(0); !reflect.DeepEqual(got, []int64{0, -1, -1, 2, 1}) {
		t.Fatalf("slots %v", got)
	}
	if res.Victims != 0 || res.Tables[0] != (cache.TableStats{Hits: 3, Misses: 2, DistinctHits: 3, DistinctMisses: 2}) {
		t.Fatalf("batch 4 = %+v", res)
	}
}

// reference is a slow, obviously correct LFU (reftest): counts since
// insertion, a global clock per lookup, eviction by a scan for the smallest
// (count, clock) among rows the batch does not use.
type reference struct {
	reftest.Model
	count []int
}

func (r *reference) plan(t int64, ids []int64) (slots []int64, hits []byte, victims []cachetest.Victim) {
	slots, hits, victims, _ = r.Plan(t, ids, reftest.Hooks{
		Better: func(c, s int) bool {
			return r.count[c] < r.count[s] || (r.count[c] == r.count[s] && r.Last[c] < r.Last[s])
		},
		Touch: func(s int) { r.count[s]++ },
		Insert: func(s int, fresh bool) {
			if fresh {
				r.count = append(r.count, 0)
			}
			r.count[s] = 0
		},
		Bypass: func() bool {
			r.Clock++ // the real policy ticks for every missed lookup
			return true
		},
	})
	return slots, hits, victims
}

func TestMatchesReference(t *testing.T) {
	const capacity, rows, batches = 16, 64, 200
	rng := rand.New(rand.NewPCG(1, 2))
	c := configured(t, capacity, rows, 8)
	refs := []*reference{{Model: reftest.Model{Capacity: capacity}}, {Model: reftest.Model{Capacity: 8}}}
	for seq := range uint64(batches) {
		a := cachetest.NewArena(t, 1<<14)
		ids := make([][]int64, len(refs))
		for tab := range ids {
			r := rows
			if tab == 1 {
				r = 8
			}
			for range rng.IntN(24) {
				ids[tab] = append(ids[tab], int64(rng.IntN(rng.IntN(r)+1)))
			}
		}
		p, res := plan(t, c, a, seq, ids...)
		var want []cachetest.Victim
		for tab, r := range refs {
			// The policy's clock is global over tables; the reference's per
			// table. Only the order of stamps matters, which both keep.
			slots, hits, victims := r.plan(int64(tab), ids[tab])
			reftest.Match(t, seq, tab, p, ids[tab], slots, hits)
			want = append(want, victims...)
		}
		reftest.MatchVictims(t, seq, p, res.Victims, want)
	}
}

func TestConfigure(t *testing.T) {
	reftest.CheckConfigure(t, New, Name, ``, `{}`, `{"capacity":0}`, `{"capacity":2,"ways":4}`, `[1]`)
}

func TestBadRequestLeavesStateUnchanged(t *testing.T) {
	ctx := context.Background()
	a := cachetest.NewArena(t, 1<<14)
	if _, err := New().Plan(ctx, a.NewPlan(1, [][]int64{{1}}).Req); !errors.Is(err, plugin.ErrNotConfigured) {
		t.Fatalf("before configure: %v", err)
	}
	c := configured(t, 2, 10, 10)
	plan(t, c, a, 1, []int64{1, 2}, nil)
	if _, err := c.Plan(ctx, a.NewPlan(2, [][]int64{{3, 4}, {10}}).Req); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Fatalf("bad row: %v", err)
	}
	if _, res := plan(t, c, a, 2, []int64{1, 2}, nil); res.Tables[0].Hits != 2 {
		t.Fatalf("state changed by a rejected batch: %+v", res.Tables[0])
	}
}

// It holds no window: zero Needs, bad options with their key.
func TestNeeds(t *testing.T) {
	reftest.CheckNeeds(t, New, map[string]cache.Needs{`{"capacity": 4, "past": 3, "future": 2}`: {}}, map[string]string{`{"capacity": 0}`: "capacity"})
}
