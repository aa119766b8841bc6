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
	"github.com/flowrun/flowrun/sdk/region"
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

// batch lays one table's IDs out in a shared-memory region, as a host
// does, and reads the policy's answers back.
type batch struct {
	r   *region.Region
	req *cache.PlanRequest
	n   int64
}

func newBatch(t *testing.T, ids []int64) *batch {
	t.Helper()
	n := int64(len(ids))
	r, err := region.Create("clock-test", 8+8*n*(1+1+3)+n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	copy(region.Int64s(r.Bytes()[:8*n]), ids)
	ref := r.Ref()
	return &batch{r: r, n: n, req: &cache.PlanRequest{
		IDs:          ref.Sub(0, 8*n),
		TableOffsets: []int64{0, n},
		Slots:        ref.Sub(8*n, 8*n),
		Victims:      ref.Sub(16*n, 24*n),
		Hits:         ref.Sub(40*n, n),
	}}
}

func (b *batch) slots() []int64 { return region.Int64s(b.r.Bytes()[8*b.n : 16*b.n]) }
func (b *batch) victims(k int64) []int64 {
	return region.Int64s(b.r.Bytes()[16*b.n : 16*b.n+24*k])
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

func plan(t *testing.T, c cache.Cache, ids ...int64) (*batch, *cache.PlanResult) {
	t.Helper()
	b := newBatch(t, ids)
	res, err := c.Plan(context.Background(), b.req)
	if err != nil {
		t.Fatal(err)
	}
	return b, res
}

func TestSecondChance(t *testing.T) {
	c := configured(t, `{"capacity": 3, "insert_referenced": false}`)
	plan(t, c, 1, 2, 3) // slots 0, 1, 2; no reference bits
	plan(t, c, 2)       // a hit sets row 2's reference bit

	// The hand is at slot 0: row 1 was not referenced again, so it goes.
	b, res := plan(t, c, 4)
	if !slices.Equal(b.slots(), []int64{0}) || !slices.Equal(b.victims(res.Victims), []int64{0, 1, 0}) {
		t.Fatalf("slots %v victims %v, want row 1 evicted from slot 0", b.slots(), b.victims(res.Victims))
	}
	// Row 2 (slot 1) has its second chance; row 3 (slot 2) has none.
	b, res = plan(t, c, 5)
	if !slices.Equal(b.slots(), []int64{2}) || !slices.Equal(b.victims(res.Victims), []int64{0, 3, 2}) {
		t.Fatalf("slots %v victims %v, want row 3 evicted from slot 2", b.slots(), b.victims(res.Victims))
	}
}

func TestBatchRowsStayResident(t *testing.T) {
	c := configured(t, `{"capacity": 2}`)
	plan(t, c, 7, 8)
	// 7 and 8 hit and are held; 9 and 10 find no slot the batch does not
	// use, so they bypass rather than evict a row the batch needs.
	b, res := plan(t, c, 9, 7, 10, 8)
	if want := []int64{-1, 0, -1, 1}; !slices.Equal(b.slots(), want) {
		t.Fatalf("slots %v, want %v", b.slots(), want)
	}
	if res.Victims != 0 || res.Tables[0] != (cache.TableStats{Hits: 2, Misses: 2}) {
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
