package clock

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/plugin/buildtest"
)

// TestConformance runs the SDK's contract suite against the policy, served
// over real gRPC inside this test process.
func TestConformance(t *testing.T) {
	t.Run("InsertReferenced", func(t *testing.T) {
		cachetest.Run(t, New)
	})
	t.Run("InsertUnreferenced", func(t *testing.T) {
		cachetest.Run(t, New,
			cachetest.WithOptions(json.RawMessage(`{"insert_referenced": false}`)))
	})
}

// TestConformanceBinary builds this plugin with `go build` and runs the
// same suite against the binary, launched as a go-plugin subprocess the way
// flowrun launches it from a graph.
func TestConformanceBinary(t *testing.T) {
	cachetest.RunBinary(t, buildtest.Binary(t, "github.com/flowrun/flowrun/examples/cache-plugin"))
}

func configured(t *testing.T, opts string) cache.Cache {
	t.Helper()
	c := New()
	err := c.Configure(context.Background(), plugin.Setup{
		Tables:  []plugin.Table{{Rows: 100, Dim: 8}},
		Options: json.RawMessage(opts),
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// plan plans one table's ids, laid out in shared memory as a host does.
func plan(t *testing.T, c cache.Cache, ids ...int64) (*cachetest.Plan, *cache.PlanResult) {
	t.Helper()
	return cachetest.NewArena(t, 1<<12).Planned(t, c, 0, ids)
}

func TestSecondChance(t *testing.T) {
	c := configured(t, `{"capacity": 3, "insert_referenced": false}`)
	plan(t, c, 1, 2, 3) // slots 0, 1, 2; no reference bits
	plan(t, c, 2)       // a hit sets row 2's reference bit

	// The hand is at slot 0: row 1 was not referenced again, so it goes.
	p, res := plan(t, c, 4)
	if !slices.Equal(p.Slots(0), []int64{0}) || !slices.Equal(p.Victims(res.Victims), []cachetest.Victim{{Row: 1, Slot: 0}}) {
		t.Fatalf("slots %v victims %v, want row 1 evicted from slot 0", p.Slots(0), p.Victims(res.Victims))
	}
	// Row 2 (slot 1) has its second chance; row 3 (slot 2) has none.
	p, res = plan(t, c, 5)
	if !slices.Equal(p.Slots(0), []int64{2}) || !slices.Equal(p.Victims(res.Victims), []cachetest.Victim{{Row: 3, Slot: 2}}) {
		t.Fatalf("slots %v victims %v, want row 3 evicted from slot 2", p.Slots(0), p.Victims(res.Victims))
	}
}

func TestBatchRowsStayResident(t *testing.T) {
	c := configured(t, `{"capacity": 2}`)
	plan(t, c, 7, 8)
	// 7 and 8 hit and are held; 9 and 10 find no slot the batch does not
	// use, so they bypass rather than evict a row the batch needs.
	p, res := plan(t, c, 9, 7, 10, 8)
	if want := []int64{-1, 0, -1, 1}; !slices.Equal(p.Slots(0), want) {
		t.Fatalf("slots %v, want %v", p.Slots(0), want)
	}
	if res.Victims != 0 || res.Tables[0] != (cache.TableStats{Hits: 2, Misses: 2, DistinctHits: 2, DistinctMisses: 2}) {
		t.Fatalf("result %+v", res)
	}
}

func TestConfigureRejectsBadOptions(t *testing.T) {
	for _, opts := range []string{`{}`, `{"capacity": 0}`, `{"capacity": 4, "hand": 1}`} {
		err := New().Configure(context.Background(), plugin.Setup{Options: json.RawMessage(opts)})
		if !errors.Is(err, plugin.ErrInvalidConfig) {
			t.Errorf("options %s: %v, want ErrInvalidConfig", opts, err)
		}
	}
}
