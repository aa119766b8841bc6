package none

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/flowrun/flowrun/sdk/cache/cachetest"
	"github.com/flowrun/flowrun/sdk/plugin"
)

func setup(opts string) plugin.Setup {
	return plugin.Setup{
		Tables:  []plugin.Table{{Rows: 10, Dim: 4}, {Rows: 5, Dim: 4}},
		Options: json.RawMessage(opts),
	}
}

func TestEveryLookupBypasses(t *testing.T) {
	ctx := context.Background()
	c := New()
	if err := c.Configure(ctx, setup(`{"capacity": 3}`)); err != nil {
		t.Fatal(err)
	}
	a := cachetest.NewArena(t, 1<<16)
	p := a.NewPlan(1, [][]int64{{1, 2, 1, 9}, {4}})
	// Poison the outputs so the test sees that every entry is written.
	for i := range a.Bytes(p.Req.Hits) {
		a.Bytes(p.Req.Hits)[i] = 7
	}
	res, err := c.Plan(ctx, p.Req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Victims != 0 {
		t.Errorf("victims = %d, want 0", res.Victims)
	}
	for tab, want := range []int64{4, 1} {
		if got := res.Tables[tab]; got.Misses != want || got.Hits != 0 || got.Evictions != 0 {
			t.Errorf("table %d stats = %+v, want %d misses only", tab, got, want)
		}
		for i, s := range p.Slots(tab) {
			if s != -1 || p.Hits(tab)[i] != 0 {
				t.Errorf("table %d id %d: slot %d hit %d, want -1 and 0", tab, i, s, p.Hits(tab)[i])
			}
		}
	}
}

func TestRejects(t *testing.T) {
	ctx := context.Background()
	a := cachetest.NewArena(t, 1<<16)

	c := New()
	if _, err := c.Plan(ctx, a.NewPlan(0, [][]int64{{1}, {}}).Req); !errors.Is(err, plugin.ErrNotConfigured) {
		t.Errorf("plan before configure: %v, want ErrNotConfigured", err)
	}
	if err := c.Configure(ctx, setup(`{"capacity": 3, "ways": 2}`)); !errors.Is(err, plugin.ErrInvalidConfig) {
		t.Errorf("unknown option: %v, want ErrInvalidConfig", err)
	}
	if err := c.Configure(ctx, setup(``)); err != nil {
		t.Fatal(err)
	}
	bad := map[string]*cachetest.Plan{
		"row out of range": a.NewPlan(1, [][]int64{{10}, {}}),
		"negative row":     a.NewPlan(1, [][]int64{{}, {-1}}),
		"one table":        a.NewPlan(1, [][]int64{{1}}),
	}
	short := a.NewPlan(1, [][]int64{{1, 2}, {3}})
	short.Req.Slots.Length = 8
	bad["slots too small"] = short
	noVictims := a.NewPlan(1, [][]int64{{1}, {3}})
	noVictims.Req.Victims.Region = ""
	bad["victims missing"] = noVictims
	for name, p := range bad {
		if _, err := c.Plan(ctx, p.Req); !errors.Is(err, plugin.ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrInvalidRequest", name, err)
		}
	}
}
