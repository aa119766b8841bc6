package cachetest

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/internal/plugintest"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// runContract runs every contract test; connect returns a fresh,
// unconfigured policy behind real gRPC.
func (c config) runContract(t *testing.T, connect func(*testing.T) cache.Cache) {
	t.Helper()
	if c.capacity < 8 {
		t.Fatalf("cachetest: capacity %d < 8", c.capacity)
	}
	ctx := context.Background()

	t.Run("Info", func(t *testing.T) {
		plugintest.Info(t, plugin.KindCache, connect(t))
	})

	t.Run("PlanBeforeConfigure", func(t *testing.T) {
		p := connect(t)
		b := newBatch(t, 1, [][]int64{{1, 2}, {3}, {4}})
		_, err := p.Plan(ctx, b.req)
		if !errors.Is(err, plugin.ErrNotConfigured) {
			t.Fatalf("Plan before Configure: err = %v, want plugin.ErrNotConfigured", err)
		}
	})

	t.Run("UnknownOption", func(t *testing.T) {
		setup := c.setup(t)
		setup.Options = c.setupOptions(t, map[string]any{"cachetest_no_such_option": true})
		plugintest.UnknownOption(t, connect(t), setup)
	})

	t.Run("Batches", func(t *testing.T) {
		p := connect(t)
		configure(t, p, c.setup(t))
		rng := rand.New(rand.NewPCG(1, 2))
		model := newResident(len(tables))
		for seq := uint64(1); seq <= 12; seq++ {
			ids := [][]int64{
				skewed(rng, tables[0].Rows, 3*int(c.capacity)),
				uniform(rng, tables[1].Rows, 50),
				uniform(rng, tables[2].Rows, 2*int(c.capacity)),
			}
			if seq == 5 {
				ids[1] = nil // a table without lookups in this batch
			}
			plan(t, p, newBatch(t, seq, ids), c.capacity, model)
		}
	})

	t.Run("RepeatedBatchHits", func(t *testing.T) {
		p := connect(t)
		configure(t, p, c.setup(t))
		rng := rand.New(rand.NewPCG(3, 4))
		// At most capacity/2 distinct rows per table, each looked up
		// twice, so the whole batch fits in any sane policy.
		ids := make([][]int64, len(tables))
		for i, tab := range tables {
			rows := distinct(rng, tab.Rows, int(min(c.capacity/2, tab.Rows)))
			ids[i] = append(append([]int64(nil), rows...), rows...)
			rng.Shuffle(len(ids[i]), func(a, b int) { ids[i][a], ids[i][b] = ids[i][b], ids[i][a] })
		}
		model := newResident(len(tables))
		b := newBatch(t, 1, ids)
		first := plan(t, p, b, c.capacity, model)
		b.reset()
		b.req.Seq = 2
		second := plan(t, p, b, c.capacity, model)
		for tb := range ids {
			for i, row := range ids[tb] {
				if first.slots[tb][i] >= 0 && second.hits[tb][i] != 1 {
					t.Errorf("table %d row %d: cached (slot %d) by batch 1, but the identical batch 2 reports a miss", tb, row, first.slots[tb][i])
				}
			}
		}
		if res := second.result; res.Victims != 0 {
			t.Errorf("identical batch 2 evicted %d rows; every row of it was already placed", res.Victims)
		}
	})

	t.Run("InvalidRequest", func(t *testing.T) {
		p := connect(t)
		configure(t, p, c.setup(t))
		ids := [][]int64{{1, 2, 3}, {4, 5}, {6}}
		cases := []struct {
			name   string
			mutate func(*cache.PlanRequest)
		}{
			{"MissingIDsRegion", func(r *cache.PlanRequest) {
				r.IDs = region.Ref{Region: region.Prefix + "0-0-cachetest-missing", Length: r.IDs.Length}
			}},
			{"IDsRefBeyondRegion", func(r *cache.PlanRequest) { r.IDs.Offset = r.IDs.Length }},
			{"ShortSlots", func(r *cache.PlanRequest) { r.Slots.Length = 8 }},
			{"ShortHits", func(r *cache.PlanRequest) { r.Hits.Length = 1 }},
			{"TooFewTableOffsets", func(r *cache.PlanRequest) { r.TableOffsets = r.TableOffsets[:len(r.TableOffsets)-1] }},
			{"TableOffsetsBeyondIDs", func(r *cache.PlanRequest) {
				r.TableOffsets[len(r.TableOffsets)-1] += 1000
			}},
		}
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				b := newBatch(t, uint64(i+1), ids)
				tc.mutate(b.req)
				_, err := p.Plan(ctx, b.req)
				if !errors.Is(err, plugin.ErrInvalidRequest) {
					t.Fatalf("err = %v, want plugin.ErrInvalidRequest", err)
				}
			})
		}
		// The policy must still work after refusing requests.
		plan(t, p, newBatch(t, 100, ids), c.capacity, nil)
	})
}

// plan runs one batch through p and checks the outcome.
func plan(t *testing.T, p cache.Cache, b *batch, capacity int64, model *resident) outcome {
	t.Helper()
	res, err := p.Plan(context.Background(), b.req)
	if err != nil {
		t.Fatalf("Plan batch %d: %v", b.req.Seq, err)
	}
	o := b.outcome(res)
	for _, err := range checkPlan(tables, capacity, b.ids, o, model) {
		t.Errorf("batch %d: %v", b.req.Seq, err)
	}
	if t.Failed() {
		t.FailNow()
	}
	return o
}

// skewed draws n rows of [0, rows) with a heavy head, so some rows recur
// within and across batches.
func skewed(rng *rand.Rand, rows int64, n int) []int64 {
	z := rand.NewZipf(rng, 1.2, 1, uint64(rows-1))
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(z.Uint64())
	}
	return out
}

func uniform(rng *rand.Rand, rows int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = rng.Int64N(rows)
	}
	return out
}

// distinct draws n different rows of [0, rows).
func distinct(rng *rand.Rand, rows int64, n int) []int64 {
	seen := map[int64]bool{}
	out := make([]int64, 0, n)
	for len(out) < n {
		if r := rng.Int64N(rows); !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}
