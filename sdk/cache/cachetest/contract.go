package cachetest

import (
	"context"
	"errors"
	"fmt"
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
	for _, tc := range []struct {
		name string
		run  func(*testing.T, func(*testing.T) cache.Cache)
	}{
		{"PlanBeforeConfigure", testPlanBeforeConfigure},
		{"Batches", c.testBatches},
		{"NoFuture", c.testNoFuture},
		{"RepeatedBatchHits", c.testRepeatedBatchHits},
		{"InvalidRequest", c.testInvalidRequest},
		{"Needs", c.testNeeds},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, connect) })
	}
}

// testPlanBeforeConfigure: a plan before Configure is refused with
// plugin.ErrNotConfigured.
func testPlanBeforeConfigure(t *testing.T, connect func(*testing.T) cache.Cache) {
	ctx := context.Background()
	p := connect(t)
	b := newBatch(t, 1, [][]int64{{1, 2}, {3}, {4}})
	_, err := p.Plan(ctx, b.req)
	if !errors.Is(err, plugin.ErrNotConfigured) {
		t.Fatalf("Plan before Configure: err = %v, want plugin.ErrNotConfigured", err)
	}
}

// testBatches plans a run of batches, each with its future window, and
// checks every answer (and, WithWindows, the windows held).
func (c config) testBatches(t *testing.T, connect func(*testing.T) cache.Cache) {
	p := connect(t)
	plugintest.Configured(t, p, c.setup(t))
	rng := rand.New(rand.NewPCG(1, 2))
	batches := make([]*batch, 16)
	width := c.past + 1 + c.future
	for i := range batches {
		ids := c.draw(rng, false)
		if c.holds && i >= width {
			// Half of the large table's rows come back from the batch
			// just out of the window: the least recently used rows,
			// which a policy that holds nothing evicts first, although
			// the future batches look them up again.
			for k := 0; k < len(ids[2]); k += 2 {
				ids[2][k] = batches[i-width].ids[2][k]
			}
		}
		batches[i] = newBatch(t, uint64(i+1), ids)
	}
	model := newResident(len(tables))
	holds := newHoldCheck(c.past)
	for i, b := range batches {
		// The next batches, fewer at the end of the run.
		for _, next := range batches[i+1 : min(len(batches), i+1+c.future)] {
			b.req.Future = append(b.req.Future, cache.Window{Seq: next.req.Seq, IDs: next.req.IDs})
		}
		o := plan(t, p, b, c.capacity, model)
		if c.holds {
			for _, err := range holds.check(b, batches[i+1:i+1+len(b.req.Future)], o) {
				t.Errorf("batch %d: %v", b.req.Seq, err)
			}
			if t.Failed() {
				t.FailNow()
			}
		}
	}
}

// testNoFuture: a host may send no future window at all (a sequential
// graph), whatever window the policy would like. Batch 3 has a table
// without lookups.
func (c config) testNoFuture(t *testing.T, connect func(*testing.T) cache.Cache) {
	p := connect(t)
	plugintest.Configured(t, p, c.setup(t))
	rng := rand.New(rand.NewPCG(5, 6))
	model := newResident(len(tables))
	for seq := uint64(1); seq <= 4; seq++ {
		plan(t, p, newBatch(t, seq, c.draw(rng, seq == 3)), c.capacity, model)
	}
}

// testRepeatedBatchHits: a batch planned twice hits everything it cached
// the first time and evicts nothing.
func (c config) testRepeatedBatchHits(t *testing.T, connect func(*testing.T) cache.Cache) {
	p := connect(t)
	plugintest.Configured(t, p, c.setup(t))
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
}

// testInvalidRequest: malformed requests are refused with
// plugin.ErrInvalidRequest, and the policy still works afterwards.
func (c config) testInvalidRequest(t *testing.T, connect func(*testing.T) cache.Cache) {
	ctx := context.Background()
	p := connect(t)
	plugintest.Configured(t, p, c.setup(t))
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
}

// draw makes a batch's IDs: a skewed mid-size table, a table smaller than
// the capacity (without lookups when empty1 is set), and a large table
// where nearly every ID is new. With windows to hold, each table gets at
// most capacity/(past+1+future) lookups, so that every row of the window
// fits. Batches drawn with the same empty1 have the same layout, as the
// batches of one run and their future windows do.
func (c config) draw(rng *rand.Rand, empty1 bool) [][]int64 {
	n0, n1, n2 := 3*int(c.capacity), 50, 2*int(c.capacity)
	if c.holds {
		per := int(c.capacity) / (c.past + 1 + c.future)
		n0, n1, n2 = per, min(per, n1), per
	}
	ids := [][]int64{
		skewed(rng, tables[0].Rows, n0),
		uniform(rng, tables[1].Rows, n1),
		uniform(rng, tables[2].Rows, n2),
	}
	if empty1 {
		ids[1] = nil
	}
	return ids
}

// holdCheck remembers the slots the last past batches used, to check that
// a batch's victims respect the host's windows.
type holdCheck struct {
	past int
	used []map[[2]int64]bool // (table, slot) per batch, oldest first
}

func newHoldCheck(past int) *holdCheck { return &holdCheck{past: past} }

// check checks b's victims against the slots of the past batches and the
// rows of the future batches sent with b, then remembers b's slots.
func (h *holdCheck) check(b *batch, future []*batch, o outcome) []error {
	var errs []error
	rows := map[[2]int64]uint64{} // (table, row) -> first future batch using it
	for _, f := range future {
		for t, tab := range f.ids {
			for _, row := range tab {
				if _, ok := rows[[2]int64{int64(t), row}]; !ok {
					rows[[2]int64{int64(t), row}] = f.req.Seq
				}
			}
		}
	}
	for _, v := range o.victims {
		t, row, slot := v[0], v[1], v[2]
		for k, used := range h.used {
			if used[[2]int64{t, slot}] {
				seq := b.req.Seq - uint64(len(h.used)-k)
				errs = append(errs, fmt.Errorf("evicts table %d slot %d (row %d), which batch %d uses and may not have trained yet (past window %d; ScratchPipe RAW hazards 2/3)", t, slot, row, seq, h.past))
			}
		}
		if seq, ok := rows[[2]int64{t, row}]; ok {
			errs = append(errs, fmt.Errorf("evicts table %d row %d (slot %d), which future batch %d looks up: its collect would read the host row before this batch's insert writes it back (ScratchPipe RAW hazard 4)", t, row, slot, seq))
		}
	}
	if h.past > 0 {
		used := map[[2]int64]bool{}
		for t, tab := range o.slots {
			for _, slot := range tab {
				if slot >= 0 {
					used[[2]int64{int64(t), slot}] = true
				}
			}
		}
		h.used = append(h.used, used)
		if len(h.used) > h.past {
			h.used = h.used[1:]
		}
	}
	return errs
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
