package lru

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/flowrun/flowrun/plugins/caches/internal/reftest"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

func configured(t *testing.T, capacity int64, rows ...int64) cache.Cache {
	t.Helper()
	return reftest.Configured(t, New(), 0, fmt.Sprintf(`{"capacity":%d}`, capacity), rows...)
}

func plan(t *testing.T, c cache.Cache, a *cachetest.Arena, seq uint64, ids ...[]int64) (*cachetest.Plan, *cache.PlanResult) {
	t.Helper()
	return a.Planned(t, c, seq, ids...)
}

func TestHitsMissesEvictionAndBypass(t *testing.T) {
	c := configured(t, 2, 100)
	a := cachetest.NewArena(t, 1<<16)

	p, res := plan(t, c, a, 1, []int64{1, 2})
	if got := p.Slots(0); !reflect.DeepEqual(got, []int64{0, 1}) {
		t.Fatalf("batch 1 slots %v, want [0 1]", got)
	}
	if res.Victims != 0 || res.Tables[0] != (cache.TableStats{Misses: 2, DistinctMisses: 2}) {
		t.Fatalf("batch 1 = %+v", res)
	}

	// 1 hits; 3 evicts 2, the least recently used row batch 2 does not use.
	p, res = plan(t, c, a, 2, []int64{3, 1})
	if got := p.Slots(0); !reflect.DeepEqual(got, []int64{1, 0}) {
		t.Fatalf("batch 2 slots %v, want [1 0]", got)
	}
	if got := p.Hits(0); !reflect.DeepEqual(got, []byte{0, 1}) {
		t.Fatalf("batch 2 hits %v", got)
	}
	if got := p.Victims(res.Victims); !reflect.DeepEqual(got, []cachetest.Victim{{Table: 0, Row: 2, Slot: 1}}) {
		t.Fatalf("batch 2 victims %v", got)
	}
	if res.Tables[0] != (cache.TableStats{Hits: 1, Misses: 1, Evictions: 1, DistinctHits: 1, DistinctMisses: 1}) {
		t.Fatalf("batch 2 stats %+v", res.Tables[0])
	}

	// Four distinct rows, capacity two: the two hits stay, the misses
	// bypass, nothing the batch uses is evicted.
	p, res = plan(t, c, a, 3, []int64{2, 3, 4, 1, 2})
	if got := p.Slots(0); !reflect.DeepEqual(got, []int64{-1, 1, -1, 0, -1}) {
		t.Fatalf("batch 3 slots %v", got)
	}
	if res.Victims != 0 || res.Tables[0] != (cache.TableStats{Hits: 2, Misses: 3, DistinctHits: 2, DistinctMisses: 2}) {
		t.Fatalf("batch 3 = %+v", res)
	}
}

func TestDuplicateMissSharesSlot(t *testing.T) {
	c := configured(t, 4, 10, 10)
	a := cachetest.NewArena(t, 1<<16)
	p, res := plan(t, c, a, 1, []int64{5, 5, 6}, []int64{5})
	if got := p.Slots(0); !reflect.DeepEqual(got, []int64{0, 0, 1}) {
		t.Fatalf("slots %v", got)
	}
	if got := p.Hits(0); !reflect.DeepEqual(got, []byte{0, 0, 0}) {
		t.Fatalf("a row inserted by this batch is not a hit: %v", got)
	}
	if res.Tables[0].Misses != 3 || res.Tables[1].Misses != 1 {
		t.Fatalf("stats %+v", res.Tables)
	}
	if got := p.Slots(1); !reflect.DeepEqual(got, []int64{0}) {
		t.Fatalf("tables are independent: slots %v", got)
	}
}

// reference is the slow, obviously correct model of the policy (reftest):
// eviction scans for the oldest stamp among rows the batch does not use.
type reference struct{ reftest.Model }

func (r *reference) plan(t int64, ids []int64) (slots []int64, hits []byte, victims []cachetest.Victim) {
	slots, hits, victims, _ = r.Plan(t, ids, reftest.Hooks{
		Better: func(c, s int) bool { return r.Last[c] < r.Last[s] },
	})
	return slots, hits, victims
}

func TestMatchesReference(t *testing.T) {
	const capacity, rows, batches = 16, 64, 200
	rng := rand.New(rand.NewPCG(1, 2))
	c := configured(t, capacity, rows, rows, 8)
	refs := []*reference{{Model: reftest.Model{Capacity: capacity}}, {Model: reftest.Model{Capacity: capacity}}, {Model: reftest.Model{Capacity: 8}}}
	for seq := range uint64(batches) {
		a := cachetest.NewArena(t, 1<<14)
		ids := make([][]int64, 3)
		for tab := range ids {
			n := rng.IntN(24) // sometimes more distinct rows than capacity
			for range n {
				// Skewed towards low rows, so that hits and reuse happen.
				r := int64(rng.IntN(rng.IntN(int(setupRows(tab, rows))) + 1))
				ids[tab] = append(ids[tab], r)
			}
		}
		p, res := plan(t, c, a, seq, ids...)
		var wantVictims []cachetest.Victim
		for tab, r := range refs {
			slots, hits, victims := r.plan(int64(tab), ids[tab])
			reftest.Match(t, seq, tab, p, ids[tab], slots, hits)
			if res.Tables[tab].Evictions != int64(len(victims)) {
				t.Fatalf("batch %d table %d: %d evictions, want %d", seq, tab, res.Tables[tab].Evictions, len(victims))
			}
			wantVictims = append(wantVictims, victims...)
		}
		reftest.MatchVictims(t, seq, p, res.Victims, wantVictims)
	}
}

func setupRows(tab int, rows int64) int64 {
	if tab == 2 {
		return 8
	}
	return rows
}

func TestCapacityAboveRowsHoldsWholeTable(t *testing.T) {
	c := configured(t, 1000, 3)
	a := cachetest.NewArena(t, 1<<14)
	plan(t, c, a, 1, []int64{0, 1, 2})
	p, res := plan(t, c, a, 2, []int64{2, 1, 0})
	if res.Tables[0].Hits != 3 || !reflect.DeepEqual(p.Slots(0), []int64{2, 1, 0}) {
		t.Fatalf("got %+v slots %v", res.Tables[0], p.Slots(0))
	}
}

func TestConfigure(t *testing.T) {
	reftest.CheckConfigure(t, New, Name, ``, `{}`, `{"capacity":0}`, `{"capacity":-3}`, `{"capacity":2,"ways":4}`, `[1]`)
}

func TestReconfigureStartsEmpty(t *testing.T) {
	c := configured(t, 2, 10)
	a := cachetest.NewArena(t, 1<<14)
	plan(t, c, a, 1, []int64{1, 2})
	if err := c.Configure(context.Background(), plugin.Setup{
		Tables: []plugin.Table{{Rows: 10, Dim: 4}}, Options: json.RawMessage(`{"capacity":2}`),
	}); err != nil {
		t.Fatal(err)
	}
	if _, res := plan(t, c, a, 1, []int64{1, 2}); res.Tables[0].Hits != 0 {
		t.Fatalf("hits after reconfigure: %+v", res.Tables[0])
	}
}

func TestBadRequestLeavesStateUnchanged(t *testing.T) {
	ctx := context.Background()
	a := cachetest.NewArena(t, 1<<14)
	c := New()
	if _, err := c.Plan(ctx, a.NewPlan(1, [][]int64{{1}}).Req); !errors.Is(err, plugin.ErrNotConfigured) {
		t.Fatalf("before configure: %v", err)
	}
	c = configured(t, 2, 10, 10)
	plan(t, c, a, 1, []int64{1, 2}, nil)
	// Table 0 would evict, but table 1's bad row rejects the whole batch.
	if _, err := c.Plan(ctx, a.NewPlan(2, [][]int64{{3, 4}, {10}}).Req); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Fatalf("bad row: %v", err)
	}
	bad := a.NewPlan(2, [][]int64{{3}, {}})
	bad.Req.TableOffsets = []int64{0, 2, 1}
	if _, err := c.Plan(ctx, bad.Req); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Fatalf("decreasing offsets: %v", err)
	}
	if _, res := plan(t, c, a, 2, []int64{1, 2}, nil); res.Tables[0].Hits != 2 {
		t.Fatalf("state changed by a rejected batch: %+v", res.Tables[0])
	}
}

func BenchmarkPlan(b *testing.B) {
	const n = 4096
	setup := plugin.Setup{Tables: []plugin.Table{{Rows: 1 << 20, Dim: 4}}, Options: json.RawMessage(`{"capacity":65536}`)}
	c := New()
	if err := c.Configure(context.Background(), setup); err != nil {
		b.Fatal(err)
	}
	a := cachetest.NewArena(b, 1<<20)
	rng := rand.New(rand.NewPCG(3, 4))
	ids := make([]int64, n)
	p := a.NewPlan(0, [][]int64{ids})
	view := region.Int64s(a.Bytes(p.Req.IDs))
	b.ResetTimer()
	for i := range b.N {
		for j := range view {
			view[j] = int64(rng.IntN(1 << 17))
		}
		p.Req.Seq = uint64(i)
		if _, err := c.Plan(context.Background(), p.Req); err != nil {
			b.Fatal(err)
		}
	}
}

// It holds no window: zero Needs, bad options with their key.
func TestNeeds(t *testing.T) {
	reftest.CheckNeeds(t, New, map[string]cache.Needs{`{"capacity": 4, "past": 3, "future": 2}`: {}}, map[string]string{`{"capacity": 0}`: "capacity"})
}
