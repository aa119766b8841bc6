package belady

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/flowrun/flowrun/plugins/caches/internal/reftest"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
)

func configured(t *testing.T, capacity int64, rows ...int64) cache.Cache {
	t.Helper()
	return reftest.Configured(t, New(), 0, fmt.Sprintf(`{"capacity":%d}`, capacity), rows...)
}

// planAll plans one-table batches, each with the next horizon batches as
// its future window.
func planAll(t *testing.T, c cache.Cache, horizon int, batches [][]int64) []reftest.Step {
	t.Helper()
	steps := reftest.PlanAll(t, c, horizon, batches)
	for i, s := range steps {
		if s.Err != nil {
			t.Fatalf("batch %d: %v", i, s.Err)
		}
	}
	return steps
}

func TestEvictsFarthestNextUse(t *testing.T) {
	c := configured(t, 3, 100)
	steps := planAll(t, c, 3, [][]int64{
		{1, 2, 3},
		{4, 4, 4}, // 1 is next used in batch 3, 2 in batch 2, 3 never: 3 goes (though 1 is older)
		{2, 2, 2},
		{1, 1, 1},
		{5, 5, 5}, // 1, 2 and 4 never come back: the least recent, 4, goes
	})
	want := [][]cachetest.Victim{nil, {{Row: 3, Slot: 2}}, nil, nil, {{Row: 4, Slot: 2}}}
	for i, s := range steps {
		if got := s.P.Victims(s.Res.Victims); len(got)+len(want[i]) > 0 && !reflect.DeepEqual(got, want[i]) {
			t.Errorf("batch %d: victims %v, want %v", i, got, want[i])
		}
	}
}

// reference is a slow, obviously correct model (reftest): next use by
// scanning the window, eviction by a scan for the farthest next use, then
// the oldest lookup, among rows the batch does not use.
type reference struct{ reftest.Model }

func (r *reference) plan(ids []int64, future [][]int64) (slots []int64, hits []byte, victims []cachetest.Victim) {
	next := func(row int64) int {
		for j, f := range future {
			for _, x := range f {
				if x == row {
					return j + 1
				}
			}
		}
		return math.MaxInt
	}
	slots, hits, victims, _ = r.Plan(0, ids, reftest.Hooks{
		Better: func(c, s int) bool {
			nc, ns := next(r.RowOf[c]), next(r.RowOf[s])
			return nc > ns || (nc == ns && r.Last[c] < r.Last[s])
		},
	})
	return slots, hits, victims
}

func TestMatchesReference(t *testing.T) {
	for _, horizon := range []int{0, 2, 8} {
		t.Run(fmt.Sprint("horizon", horizon), func(t *testing.T) {
			const capacity, rows, batches, per = 16, 64, 150, 12
			rng := rand.New(rand.NewPCG(uint64(horizon), 9))
			all := make([][]int64, batches)
			for i := range all {
				for range per {
					all[i] = append(all[i], int64(rng.IntN(rng.IntN(rows)+1)))
				}
			}
			steps := planAll(t, configured(t, capacity, rows), horizon, all)
			ref := &reference{Model: reftest.Model{Capacity: capacity}}
			for i, s := range steps {
				slots, hits, victims := ref.plan(all[i], all[i+1:min(batches, i+1+horizon)])
				reftest.Match(t, uint64(i), 0, s.P, all[i], slots, hits)
				reftest.MatchVictims(t, uint64(i), s.P, s.Res.Victims, victims)
			}
		})
	}
}

// Seeing further ahead never costs hits here: with the whole run as its
// window the policy beats itself without one (which is LRU).
func TestHorizonRaisesHitRate(t *testing.T) {
	const capacity, rows, batches, per = 32, 400, 200, 16
	rng := rand.New(rand.NewPCG(4, 2))
	all := make([][]int64, batches)
	for i := range all {
		for range per {
			all[i] = append(all[i], int64(rng.IntN(rng.IntN(rows)+1)))
		}
	}
	hits := func(horizon int) (n int64) {
		for _, s := range planAll(t, configured(t, capacity, rows), horizon, all) {
			n += s.Res.Tables[0].Hits
		}
		return n
	}
	lru, window, whole := hits(0), hits(2), hits(batches)
	if !(lru < window && window <= whole) {
		t.Fatalf("hits: no window %d, window 2 %d, whole run %d; want increasing", lru, window, whole)
	}
	t.Logf("hits of %d lookups: no window %d, window 2 %d, whole run %d", batches*per, lru, window, whole)
}

func TestConfigure(t *testing.T) {
	reftest.CheckConfigure(t, New, Name, ``, `{"capacity":0}`, `{"capacity":2,"ways":4}`)
}

// It holds no window: zero Needs, bad options with their key.
func TestNeeds(t *testing.T) {
	reftest.CheckNeeds(t, New, map[string]cache.Needs{`{"capacity": 4, "past": 3, "future": 2}`: {}}, map[string]string{`{"capacity": 0}`: "capacity"})
}
