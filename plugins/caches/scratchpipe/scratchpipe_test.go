package scratchpipe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/plugins/caches/internal/reftest"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

func configured(t *testing.T, options string, rows ...int64) cache.Cache {
	t.Helper()
	return reftest.Configured(t, New(), 11, options, rows...)
}

func planAll(t *testing.T, c cache.Cache, future int, batches [][]int64) []reftest.Step {
	t.Helper()
	return reftest.PlanAll(t, c, future, batches)
}

// mustPlanAll is planAll for a test that expects every batch planned: it
// fails t on the first refusal, where a test reading the missing result
// would panic and abort the package's other tests.
func mustPlanAll(t *testing.T, c cache.Cache, future int, batches [][]int64) []reftest.Step {
	t.Helper()
	steps := planAll(t, c, future, batches)
	for i, s := range steps {
		if s.Err != nil {
			t.Fatalf("batch %d: %v", i, s.Err)
		}
	}
	return steps
}

// A slot a batch uses stays held for past_window more batches, and becomes
// the LRU victim right after.
func TestPastWindowHoldsSlots(t *testing.T) {
	c := configured(t, `{"capacity":4,"past_window":2,"future_window":0}`, 100)
	steps := planAll(t, c, 0, [][]int64{
		{1}, {2}, {3}, {4}, // fill the four slots
		{5}, // 1 (batch 0) is out of the window: evicted
		{6}, // 2 (batch 1) next
	})
	for i, s := range steps {
		if s.Err != nil {
			t.Fatalf("batch %d: %v", i, s.Err)
		}
	}
	if got := steps[4].P.Victims(steps[4].Res.Victims); !reflect.DeepEqual(got, []cachetest.Victim{{Row: 1, Slot: 0}}) {
		t.Fatalf("batch 4 victims %v, want row 1 from slot 0", got)
	}
	if got := steps[5].P.Victims(steps[5].Res.Victims); !reflect.DeepEqual(got, []cachetest.Victim{{Row: 2, Slot: 1}}) {
		t.Fatalf("batch 5 victims %v, want row 2 from slot 1", got)
	}

	// With past window 2 and capacity 3, batches 1 and 2 hold two slots:
	// batch 3 has two rows to place and one slot for them: refused.
	c = configured(t, `{"capacity":3,"past_window":2,"future_window":0}`, 100)
	steps = planAll(t, c, 0, [][]int64{{1}, {2}, {3}, {4, 5}})
	last := steps[len(steps)-1]
	if !errors.Is(last.Err, plugin.ErrInvalidRequest) {
		t.Fatalf("batch 3: err %v, want ErrInvalidRequest", last.Err)
	}
	for _, want := range []string{"batch 3", "table 0", "capacity ≥ 4"} {
		if !strings.Contains(last.Err.Error(), want) {
			t.Errorf("error %q does not mention %q", last.Err, want)
		}
	}
}

// A cached row that a future batch looks up is not evicted, even when it
// is the least recently used.
func TestFutureWindowHoldsRows(t *testing.T) {
	c := configured(t, `{"capacity":3,"past_window":0,"future_window":2}`, 100)
	// Future windows have the batch's layout: pad with duplicates.
	steps := planAll(t, c, 2, [][]int64{
		{1, 2, 3},
		{4, 4, 4}, // 1 is the LRU row, but batch 3 looks it up: 2 goes
		{5, 5, 5}, // 3 next (1 is still held by batch 3)
		{1, 1, 1},
	})
	want := [][]cachetest.Victim{nil, {{Row: 2, Slot: 1}}, {{Row: 3, Slot: 2}}, nil}
	for i, s := range steps {
		if s.Err != nil {
			t.Fatalf("batch %d: %v", i, s.Err)
		}
		if got := s.P.Victims(s.Res.Victims); len(got)+len(want[i]) > 0 && !reflect.DeepEqual(got, want[i]) {
			t.Errorf("batch %d victims %v, want %v", i, got, want[i])
		}
	}
	if got := steps[3].P.Hits(0); !reflect.DeepEqual(got, []byte{1, 1, 1}) {
		t.Errorf("batch 3 hits %v: row 1 was held for it", got)
	}

	// Without the future window, LRU evicts row 1 at batch 1.
	c = configured(t, `{"capacity":3,"past_window":0,"future_window":0}`, 100)
	steps = mustPlanAll(t, c, 2, [][]int64{{1, 2, 3}, {4, 4, 4}})
	if got := steps[1].P.Victims(steps[1].Res.Victims); !reflect.DeepEqual(got, []cachetest.Victim{{Row: 1, Slot: 0}}) {
		t.Errorf("window 0: victims %v, want row 1", got)
	}
}

// A refused batch changes nothing: the next one is planned as if it had
// never been asked.
func TestRefusalLeavesStateUnchanged(t *testing.T) {
	opts := `{"capacity":4,"past_window":1,"future_window":0}`
	a := cachetest.NewArena(t, 1<<16)
	plan := func(c cache.Cache, seq uint64, ids []int64) (*cachetest.Plan, *cache.PlanResult, error) {
		p := a.NewPlan(seq, [][]int64{ids})
		res, err := c.Plan(context.Background(), p.Req)
		return p, res, err
	}
	c, ref := configured(t, opts, 100), configured(t, opts, 100)
	for seq, ids := range [][]int64{{1, 2}, {3}} {
		for _, p := range []cache.Cache{c, ref} {
			if _, _, err := plan(p, uint64(seq), ids); err != nil {
				t.Fatalf("batch %d: %v", seq, err)
			}
		}
	}
	// Batch 2 needs 4 new slots; 3 (batch 1) is held, so 3 are available.
	if _, _, err := plan(c, 2, []int64{5, 6, 7, 8}); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Fatalf("too many rows: %v", err)
	}
	p1, r1, err1 := plan(c, 2, []int64{5, 6})
	p2, r2, err2 := plan(ref, 2, []int64{5, 6})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if !reflect.DeepEqual(p1.Slots(0), p2.Slots(0)) || !reflect.DeepEqual(p1.Victims(r1.Victims), p2.Victims(r2.Victims)) {
		t.Fatalf("after a refusal: slots %v victims %v; never refused: slots %v victims %v",
			p1.Slots(0), p1.Victims(r1.Victims), p2.Slots(0), p2.Victims(r2.Victims))
	}
}

// reference is a slow model of the controller written from the paper's
// words rather than its bit tricks: a slot is held when one of the past
// batches of the window or the current batch uses it, or when it caches a
// row one of the future batches looks up; victims are the least recently
// used of the others.
type reference struct {
	reftest.Model
	past, future int
	used         []map[int]bool // per planned batch
}

func (r *reference) plan(ids []int64, future [][]int64) (slots []int64, hits []byte, victims []cachetest.Victim, err error) {
	held := map[int]bool{}
	for k := 1; k <= r.past && k <= len(r.used); k++ {
		for s := range r.used[len(r.used)-k] {
			held[s] = true
		}
	}
	for _, f := range future[:min(len(future), r.future)] {
		for _, row := range f {
			if s := r.Find(row); s >= 0 {
				held[s] = true
			}
		}
	}
	slots, hits, victims, ok := r.Plan(0, ids, reftest.Hooks{
		Better:   func(c, s int) bool { return r.Last[c] < r.Last[s] },
		Eligible: func(c int) bool { return !held[c] },
		Bypass:   func() bool { return false },
	})
	if !ok {
		return nil, nil, nil, fmt.Errorf("no slot")
	}
	r.used = append(r.used, r.Used)
	return slots, hits, victims, nil
}

// skewedBatches draws n batches of per IDs below rows, skewed towards low
// IDs (a uniform draw below a uniform bound).
func skewedBatches(rng *rand.Rand, n, per, rows int) [][]int64 {
	all := make([][]int64, n)
	for i := range all {
		for range per {
			all[i] = append(all[i], int64(rng.IntN(rng.IntN(rows)+1)))
		}
	}
	return all
}

func TestMatchesReference(t *testing.T) {
	for _, w := range [][2]int{{3, 2}, {0, 0}, {1, 3}, {5, 0}} {
		t.Run(fmt.Sprintf("past%d-future%d", w[0], w[1]), func(t *testing.T) {
			const capacity, rows, batches = 48, 200, 150
			all := skewedBatches(rand.New(rand.NewPCG(uint64(w[0]), uint64(w[1]))), batches, capacity/(w[0]+1+w[1]), rows)
			c := configured(t, fmt.Sprintf(`{"capacity":%d,"past_window":%d,"future_window":%d}`, capacity, w[0], w[1]), rows)
			steps := planAll(t, c, w[1], all)
			ref := &reference{Model: reftest.Model{Capacity: capacity}, past: w[0], future: w[1]}
			var evictions int
			for i, s := range steps {
				if s.Err != nil {
					t.Fatalf("batch %d: %v", i, s.Err)
				}
				slots, hits, victims, err := ref.plan(all[i], all[i+1:min(batches, i+1+w[1])])
				if err != nil {
					t.Fatalf("batch %d: reference: %v", i, err)
				}
				reftest.Match(t, uint64(i), 0, s.P, all[i], slots, hits)
				reftest.MatchVictims(t, uint64(i), s.P, s.Res.Victims, victims)
				evictions += len(victims)
			}
			if evictions == 0 {
				t.Fatal("no evictions: the test does not exercise the Hold mask")
			}
		})
	}
}

// The future windows are the host's forecast, not a promise. When the
// batch that arrives differs from the windows that announced it, every
// lookup still gets the slot its row is in: a hit the slot the row held
// before the batch, a miss the slot the Hit-Map gives it after. (The
// capacity check tries each row first in the slot the previous check found
// the announced row at that position in; here that slot often holds
// another row. The reference above does not model holds made for a
// forecast the host then breaks, so this checks the Hit-Map itself.)
func TestSlotsWhenWindowsDiffer(t *testing.T) {
	for _, w := range [][2]int{{3, 2}, {1, 3}, {0, 1}} {
		t.Run(fmt.Sprintf("past%d-future%d", w[0], w[1]), func(t *testing.T) {
			const capacity, rows, batches = 48, 200, 150
			rng := rand.New(rand.NewPCG(uint64(w[0])+7, uint64(w[1])))
			all := skewedBatches(rng, batches, capacity/(w[0]+1+w[1]), rows)
			c := configured(t, fmt.Sprintf(`{"capacity":%d,"past_window":%d,"future_window":%d}`, capacity, w[0], w[1]), rows)
			hitMap := &c.(*policy).tables[0].HitMap
			a := cachetest.NewArena(t, 1<<20)
			var hits, moved int
			for i, ids := range all {
				p := a.NewPlan(uint64(i), [][]int64{ids})
				for j := i + 1; j < min(batches, i+1+w[1]); j++ {
					// What batch i announces of batch j: a third of its
					// positions redrawn.
					f := slices.Clone(all[j])
					for k := range f {
						if rng.IntN(3) == 0 {
							f[k], moved = int64(rng.IntN(rows)), moved+1
						}
					}
					p.Req.Future = append(p.Req.Future, cache.Window{Seq: uint64(j), IDs: a.Int64s(f)})
				}
				before := make([]int32, len(ids))
				for k, row := range ids {
					before[k] = -1
					if s, ok := hitMap.Lookup(row); ok {
						before[k] = s
					}
				}
				if _, err := c.Plan(context.Background(), p.Req); err != nil {
					t.Fatalf("batch %d: %v", i, err)
				}
				slots, hit := p.Slots(0), p.Hits(0)
				for k, row := range ids {
					after, ok := hitMap.Lookup(row)
					if !ok || slots[k] != int64(after) || (hit[k] == 1) != (before[k] >= 0) || (before[k] >= 0 && before[k] != after) {
						t.Fatalf("batch %d position %d: row %d got slot %d hit %d; the Hit-Map had it in slot %d before and has it in %d (%v) after",
							i, k, row, slots[k], hit[k], before[k], after, ok)
					}
					hits += int(hit[k])
				}
			}
			if hits == 0 || moved == 0 {
				t.Fatalf("%d hits, %d announced rows redrawn: the test exercises nothing", hits, moved)
			}
		})
	}
}

// Random victims are a function of the run's seed.
func TestRandomVictimsFollowSeed(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	all := make([][]int64, 60)
	for i := range all {
		for range 8 {
			all[i] = append(all[i], rng.Int64N(1000))
		}
	}
	victims := func(seed uint64) []cachetest.Victim {
		setup := plugin.Setup{Seed: seed, Tables: []plugin.Table{{Rows: 1000, Dim: 4}},
			Options: json.RawMessage(`{"capacity":48,"victim":"random"}`)}
		c := New()
		if err := c.Configure(context.Background(), setup); err != nil {
			t.Fatal(err)
		}
		var out []cachetest.Victim
		for i, s := range planAll(t, c, 2, all) {
			if s.Err != nil {
				t.Fatalf("batch %d: %v", i, s.Err)
			}
			out = append(out, s.P.Victims(s.Res.Victims)...)
		}
		return out
	}
	a, b, other := victims(1), victims(1), victims(2)
	if len(a) == 0 || !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed, different victims: %v vs %v", a, b)
	}
	if reflect.DeepEqual(a, other) {
		t.Fatalf("seeds 1 and 2 chose the same %d victims", len(a))
	}
}

// LFU victims: the un-held slot with the fewest lookups since insertion.
func TestLFUVictim(t *testing.T) {
	c := configured(t, `{"capacity":3,"past_window":0,"future_window":0,"victim":"lfu"}`, 100)
	steps := mustPlanAll(t, c, 0, [][]int64{{1, 1, 2, 3, 3}, {4}})
	if got := steps[1].P.Victims(steps[1].Res.Victims); !reflect.DeepEqual(got, []cachetest.Victim{{Row: 2, Slot: 1}}) {
		t.Fatalf("victims %v, want row 2 (one lookup)", got)
	}
}

func TestConfigure(t *testing.T) {
	reftest.CheckConfigure(t, New, Name,
		``, `{"capacity":0}`, `{"capacity":4,"victim":"mru"}`, `{"capacity":4,"past_window":-1}`,
		`{"capacity":4,"past_window":40,"future_window":30}`, `{"capacity":4,"future":1,"future_window":2}`,
		`{"capacity":4,"ways":2}`)
	windows := func(opts string) [2]int {
		var cfg Config
		if err := plugin.DecodeOptions(json.RawMessage(opts), &cfg); err != nil {
			t.Fatal(err)
		}
		p, f := cfg.Windows()
		return [2]int{p, f}
	}
	for opts, want := range map[string][2]int{
		`{"capacity":4}`:                                   {3, 2},
		`{"capacity":4,"past":5,"future":4}`:               {5, 4},
		`{"capacity":4,"past":5,"future_window":1}`:        {5, 1},
		`{"capacity":4,"past_window":0,"future":3}`:        {0, 3},
		`{"capacity":4,"past_window":0,"future_window":0}`: {0, 0},
	} {
		if got := windows(opts); got != want {
			t.Errorf("%s: windows %v, want %v", opts, got, want)
		}
	}
}

func TestBadFutureWindowIsRefused(t *testing.T) {
	c := configured(t, `{"capacity":4}`, 10)
	a := cachetest.NewArena(t, 1<<14)
	p := a.NewPlan(5, [][]int64{{1, 2}})
	next := a.NewPlan(6, [][]int64{{3, 12}})
	p.Req.Future = []cache.Window{{Seq: 6, IDs: next.Req.IDs}}
	if _, err := c.Plan(context.Background(), p.Req); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Fatalf("row outside the table in a future batch: %v", err)
	}
	p.Req.Future = []cache.Window{{Seq: 5, IDs: p.Req.IDs}}
	if _, err := c.Plan(context.Background(), p.Req); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Fatalf("future batch not after the current one: %v", err)
	}
}

func BenchmarkPlan(b *testing.B) {
	const n, capacity = 4096, 1 << 16
	setup := plugin.Setup{Tables: []plugin.Table{{Rows: 1 << 20, Dim: 4}}, Options: json.RawMessage(fmt.Sprintf(`{"capacity":%d}`, capacity))}
	c := New()
	if err := c.Configure(context.Background(), setup); err != nil {
		b.Fatal(err)
	}
	a := cachetest.NewArena(b, 1<<22)
	rng := rand.New(rand.NewPCG(3, 4))
	const window = 3
	plans := make([]*cachetest.Plan, window)
	for i := range plans {
		plans[i] = a.NewPlan(0, [][]int64{make([]int64, n)})
	}
	fill := func(p *cachetest.Plan) {
		ids := region.Int64s(a.Bytes(p.Req.IDs))
		for j := range ids {
			ids[j] = int64(rng.IntN(1 << 17))
		}
	}
	for _, p := range plans {
		fill(p)
	}
	b.ResetTimer()
	for i := range b.N {
		p := plans[i%window]
		p.Req.Seq = uint64(i)
		p.Req.Future = nil
		for j := 1; j < window; j++ {
			f := plans[(i+j)%window]
			p.Req.Future = append(p.Req.Future, cache.Window{Seq: uint64(i + j), IDs: f.Req.IDs})
		}
		if _, err := c.Plan(context.Background(), p.Req); err != nil {
			b.Fatal(err)
		}
		fill(p)
	}
}

// The capacity check counts the slots it may evict from the victim
// candidates and the expiring slots rather than from a scan of the Hold
// mask: after every batch, planned or refused, both must agree with the
// scan, for every window (past 0 holds under bit 0 itself) and victim.
func TestEvictableCountsMatchScan(t *testing.T) {
	for _, w := range [][2]int{{0, 0}, {0, 2}, {1, 0}, {3, 2}, {2, 5}} {
		for _, victim := range []string{VictimLRU, VictimLFU, VictimRandom} {
			t.Run(fmt.Sprintf("past%d-future%d-%s", w[0], w[1], victim), func(t *testing.T) {
				const n, rows, batches = 12, 300, 120
				rng := rand.New(rand.NewPCG(uint64(w[0]), uint64(w[1])))
				// Below the worst case of the window: some batches are
				// refused, the others planned.
				capacity := n*(w[0]+1) - n/4
				c := configured(t, fmt.Sprintf(`{"capacity":%d,"past_window":%d,"future_window":%d,"victim":%q}`, capacity, w[0], w[1], victim), rows, rows)
				p := c.(*policy)
				a := cachetest.NewArena(t, 1<<20)
				plans := make([]*cachetest.Plan, batches)
				for i := range plans {
					// Batches from mostly hot rows to mostly distinct.
					hot := rng.Float64()
					ids := make([][]int64, 2)
					for tab := range ids {
						for range n {
							row := rng.IntN(rows)
							if rng.Float64() < hot {
								row = rng.IntN(4)
							}
							ids[tab] = append(ids[tab], int64(row))
						}
					}
					plans[i] = a.NewPlan(uint64(i), ids)
				}
				var refused int
				for i, pl := range plans {
					for _, next := range plans[i+1 : min(batches, i+1+w[1])] {
						pl.Req.Future = append(pl.Req.Future, cache.Window{Seq: next.Req.Seq, IDs: next.Req.IDs})
					}
					if _, err := c.Plan(context.Background(), pl.Req); err != nil {
						if !errors.Is(err, plugin.ErrInvalidRequest) {
							t.Fatalf("batch %d: %v", i, err)
						}
						refused++
					}
					for tab, tb := range p.tables {
						var zero, one int64
						for s := range tb.HitMap.Filled() {
							switch tb.HoldMask[s] {
							case 0:
								zero++
							case 1:
								one++
							}
						}
						if int64(tb.victims.Len()) != zero || tb.expiring != one {
							t.Fatalf("batch %d table %d: %d candidates and %d expiring, the masks have %d zero and %d one",
								i, tab, tb.victims.Len(), tb.expiring, zero, one)
						}
					}
				}
				if refused == 0 || refused == batches {
					t.Fatalf("%d of %d batches refused: the test does not exercise both paths", refused, batches)
				}
			})
		}
	}
}
