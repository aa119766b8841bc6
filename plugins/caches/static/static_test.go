package static

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/flowrun/flowrun/plugins/caches/internal/reftest"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
	"github.com/flowrun/flowrun/sdk/plugin"
)

func configured(t *testing.T, options string, rows ...int64) cache.Cache {
	t.Helper()
	return reftest.Configured(t, New(), 0, options, rows...)
}

type answer struct {
	slots []int64
	hits  []byte
	res   *cache.PlanResult
}

func plan(t *testing.T, c cache.Cache, a *cachetest.Arena, seq uint64, ids ...[]int64) []answer {
	t.Helper()
	p, res := a.Planned(t, c, seq, ids...)
	if res.Victims != 0 {
		t.Fatalf("batch %d: %d victims; a static cache never evicts", seq, res.Victims)
	}
	out := make([]answer, len(ids))
	for tab := range ids {
		out[tab] = answer{p.Slots(tab), p.Hits(tab), res}
	}
	return out
}

func TestFirstBatchesProfile(t *testing.T) {
	c := configured(t, `{"capacity":2,"warmup_batches":2}`, 100)
	a := cachetest.NewArena(t, 1<<16)
	// Warm-up: everything bypasses while the policy counts.
	// Counts: 7:3, 5:2, 9:2, 1:1. Top-2: 7, then 5 (ties by the lower row).
	for seq, ids := range [][]int64{{7, 9, 5, 7}, {1, 7, 9, 5}} {
		got := plan(t, c, a, uint64(seq), ids)[0]
		if !reflect.DeepEqual(got.slots, []int64{-1, -1, -1, -1}) || got.res.Tables[0] != (cache.TableStats{Misses: 4, DistinctMisses: []int64{3, 4}[seq]}) {
			t.Fatalf("warm-up batch %d: slots %v stats %+v", seq, got.slots, got.res.Tables[0])
		}
	}
	// 7 is slot 0, 5 slot 1; first lookups fill (misses), cold rows bypass.
	got := plan(t, c, a, 2, []int64{5, 9, 7, 5})[0]
	if !reflect.DeepEqual(got.slots, []int64{1, -1, 0, 1}) || !reflect.DeepEqual(got.hits, []byte{0, 0, 0, 0}) {
		t.Fatalf("batch 2: slots %v hits %v", got.slots, got.hits)
	}
	got = plan(t, c, a, 3, []int64{7, 1, 5})[0]
	if !reflect.DeepEqual(got.slots, []int64{0, -1, 1}) || !reflect.DeepEqual(got.hits, []byte{1, 0, 1}) {
		t.Fatalf("batch 3: slots %v hits %v", got.slots, got.hits)
	}
	if got.res.Tables[0] != (cache.TableStats{Hits: 2, Misses: 1, DistinctHits: 2, DistinctMisses: 1}) {
		t.Fatalf("batch 3 stats %+v", got.res.Tables[0])
	}
}

func TestWholeTableNeedsNoProfile(t *testing.T) {
	c := configured(t, `{"capacity":8}`, 5, 100)
	a := cachetest.NewArena(t, 1<<16)
	got := plan(t, c, a, 0, []int64{4, 0, 4}, []int64{3})
	if !reflect.DeepEqual(got[0].slots, []int64{4, 0, 4}) || !reflect.DeepEqual(got[1].slots, []int64{-1}) {
		t.Fatalf("slots %v %v: the small table is cached from the start, the large one warms up", got[0].slots, got[1].slots)
	}
	if got = plan(t, c, a, 1, []int64{0}, nil); got[0].hits[0] != 1 {
		t.Fatalf("hits %v", got[0].hits)
	}
}

func TestFrequenciesProfile(t *testing.T) {
	a := cachetest.NewArena(t, 1<<16)
	ref := a.Int64s([]int64{
		0, 10, 5,
		1, 2, 9, // another table
		0, 20, 7,
		0, 30, 1,
		0, 10, 3, // summed: row 10 counts 8
	})
	raw, _ := json.Marshal(ref)
	c := configured(t, fmt.Sprintf(`{"capacity":2,"frequencies":%s}`, raw), 100, 100)
	got := plan(t, c, a, 0, []int64{30, 20, 10}, []int64{2, 3})
	if !reflect.DeepEqual(got[0].slots, []int64{-1, 1, 0}) || !reflect.DeepEqual(got[1].slots, []int64{0, -1}) {
		t.Fatalf("slots %v %v", got[0].slots, got[1].slots)
	}

	bad := a.Int64s([]int64{0, 100, 1})
	raw, _ = json.Marshal(bad)
	err := New().Configure(context.Background(), plugin.Setup{
		Tables:  []plugin.Table{{Rows: 100, Dim: 4}},
		Options: json.RawMessage(fmt.Sprintf(`{"capacity":2,"frequencies":%s}`, raw)),
	})
	if !errors.Is(err, plugin.ErrInvalidConfig) {
		t.Fatalf("row outside its table: %v", err)
	}
}

func TestConfigure(t *testing.T) {
	reftest.CheckConfigure(t, New, Name,
		``, `{"capacity":0}`, `{"capacity":4,"warmup_batches":0}`, `{"capacity":4,"profile":"pdf"}`,
		`{"capacity":4,"profile":"frequencies"}`, `{"capacity":4,"profile":"first_batches","frequencies":{"region":"x","length":24}}`,
		`{"capacity":4,"frequencies":{"region":"x","length":20}}`, `{"capacity":4,"ways":2}`,
		`{"capacity":4,"frequencies":{"region":"flowrun-0-0-missing","length":24}}`,
		`{"capacity":4,"past":3}`, `{"capacity":4,"profile":"first_batches","past":1}`)
}
