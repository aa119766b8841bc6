package reftest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Configured configures c with options, seed and one table of Dim 4 per
// rows, failing t on an error.
func Configured(t testing.TB, c cache.Cache, seed uint64, options string, rows ...int64) cache.Cache {
	t.Helper()
	setup := plugin.Setup{Seed: seed, Options: json.RawMessage(options)}
	for _, r := range rows {
		setup.Tables = append(setup.Tables, plugin.Table{Rows: r, Dim: 4})
	}
	if err := c.Configure(context.Background(), setup); err != nil {
		t.Fatal(err)
	}
	return c
}

// Step is one batch that PlanAll planned.
type Step struct {
	P   *cachetest.Plan
	Res *cache.PlanResult
	Err error
}

// PlanAll plans one-table batches in order, each with the next future of
// them as its future window, and stops after the first error.
func PlanAll(t testing.TB, c cache.Cache, future int, batches [][]int64) []Step {
	t.Helper()
	a := cachetest.NewArena(t, 1<<20)
	plans := make([]*cachetest.Plan, len(batches))
	for i, ids := range batches {
		plans[i] = a.NewPlan(uint64(i), [][]int64{ids})
	}
	var out []Step
	for i, p := range plans {
		for _, next := range plans[i+1 : min(len(plans), i+1+future)] {
			p.Req.Future = append(p.Req.Future, cache.Window{Seq: next.Req.Seq, IDs: next.Req.IDs})
		}
		res, err := c.Plan(context.Background(), p.Req)
		out = append(out, Step{p, res, err})
		if err != nil {
			break
		}
	}
	return out
}

// Match fails t unless table tab of plan p (batch seq, looking up ids) has
// the reference's slots and hits.
func Match(t testing.TB, seq uint64, tab int, p *cachetest.Plan, ids, slots []int64, hits []byte) {
	t.Helper()
	if got := p.Slots(tab); !reflect.DeepEqual(got, slots) {
		t.Fatalf("batch %d table %d: slots %v, want %v (ids %v)", seq, tab, got, slots, ids)
	}
	if got := p.Hits(tab); !reflect.DeepEqual(got, hits) {
		t.Fatalf("batch %d table %d: hits %v, want %v", seq, tab, got, hits)
	}
}

// MatchVictims fails t unless the n victims plan p (batch seq) reports are
// want, in order.
func MatchVictims(t testing.TB, seq uint64, p *cachetest.Plan, n int64, want []cachetest.Victim) {
	t.Helper()
	if got := p.Victims(n); len(got)+len(want) > 0 && !reflect.DeepEqual(got, want) {
		t.Fatalf("batch %d: victims %v, want %v", seq, got, want)
	}
}

// CheckConfigure fails t unless a cache from newCache rejects each of bad
// (options for one table of 10 rows) with plugin.ErrInvalidConfig, and
// its Info names a cache plugin called name and documents its options.
func CheckConfigure(t *testing.T, newCache func() cache.Cache, name string, bad ...string) {
	t.Helper()
	ctx := context.Background()
	tables := []plugin.Table{{Rows: 10, Dim: 2}}
	for _, opts := range bad {
		err := newCache().Configure(ctx, plugin.Setup{Tables: tables, Options: json.RawMessage(opts)})
		if !errors.Is(err, plugin.ErrInvalidConfig) {
			t.Errorf("options %q: %v, want ErrInvalidConfig", opts, err)
		}
	}
	info, err := newCache().Info(ctx)
	if err != nil || info.Name != name || info.Kind != plugin.KindCache || len(info.Config) == 0 {
		t.Errorf("info = %+v, %v", info, err)
	}
}

// CheckNeeds fails t unless a cache from newCache declares, for each of
// wants' options (one table of 1000 rows), those Needs, and refuses each
// of bad's options with a plugin.FieldError for the key bad gives.
func CheckNeeds(t *testing.T, newCache func() cache.Cache, wants map[string]cache.Needs, bad map[string]string) {
	t.Helper()
	ctx := context.Background()
	tables := []plugin.Table{{Rows: 1000, Dim: 4}}
	for opts, want := range wants {
		got, err := cache.NeedsOf(ctx, newCache(), plugin.Setup{Tables: tables, Options: json.RawMessage(opts)})
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Needs = %+v, %v; want %+v", opts, got, err, want)
		}
	}
	for opts, key := range bad {
		_, err := cache.NeedsOf(ctx, newCache(), plugin.Setup{Tables: tables, Options: json.RawMessage(opts)})
		if got, _ := plugin.FieldOf(err); got != key || !errors.Is(err, plugin.ErrInvalidConfig) {
			t.Errorf("%s: Needs error %v names %q, want a FieldError for %q", opts, err, got, key)
		}
	}
}
