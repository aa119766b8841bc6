// Package belady is the optimal future-aware replacement policy (Belady's
// MIN) over the future window the host sends: the upper bound on hit rate
// that none of the papers' policies reaches, for comparing them with.
//
// A batch is planned in two passes, with the same slot and victim semantics
// as package lru: hits keep their slots and are held for the batch; each
// other ID, in request order, takes a never-used slot or evicts the cached
// row whose next use is farthest. The next use of a row is the first of the
// request's Future batches that looks it up, or +∞ when none does; among
// rows never used within the window, the least recently used goes first.
// When every slot holds a row of the batch, the ID bypasses (slot -1).
//
// The horizon is what the host sends (cache.Options.Future): with none it
// is LRU, with the whole run it is MIN. It never bypasses a row to keep a
// better one (MIN with bypass would), since the host's train stage wants
// every row of a batch in Storage.
//
// Like LRU it holds no past window, so it is correct only in sequential
// graphs.
package belady

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/plankit"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Name is the policy's plugin name (builtin:belady).
const Name = "belady"

// Version is this plugin's version.
const Version = "0.1.0"

// table is one table's cache.
type table struct {
	plankit.Slots
	last []uint64 // clock of the slot's latest lookup
	// never holds the filled slots that neither the current batch nor the
	// future window uses (next use +∞), keyed by recency.
	never *plankit.SlotHeap
	// Per batch: the slots taken out of never, the next use of each slot
	// the window uses (stamped with the batch), and the window's slots by
	// farthest next use, consumed from the front.
	out      []int32
	stamp    []uint64
	nextUse  []int
	soonest  []int32
	sorted   bool
	consumed int
	// plans and clock are the policy's counters, shared by its tables.
	plans, clock *uint64
}

func newTable(capacity int32, plans, clock *uint64) *table {
	return &table{
		Slots:   plankit.NewSlots(capacity),
		plans:   plans,
		clock:   clock,
		last:    make([]uint64, capacity),
		never:   plankit.NewSlotHeap(capacity),
		stamp:   make([]uint64, capacity),
		nextUse: make([]int, capacity),
	}
}

// take removes s from never for the rest of the batch.
func (tb *table) take(s int32) {
	if tb.never.Remove(s) {
		tb.out = append(tb.out, s)
	}
}

// farthest pops the window's slot with the farthest next use that the
// batch does not use (used: stamped with -1), ties by recency.
func (tb *table) farthest() (int32, bool) {
	if !tb.sorted {
		slices.SortFunc(tb.soonest, func(a, b int32) int {
			if c := cmp.Compare(tb.nextUse[b], tb.nextUse[a]); c != 0 {
				return c
			}
			return cmp.Compare(tb.last[a], tb.last[b])
		})
		tb.sorted = true
	}
	for tb.consumed < len(tb.soonest) {
		s := tb.soonest[tb.consumed]
		tb.consumed++
		if tb.nextUse[s] > 0 {
			return s, true
		}
	}
	return -1, false
}

// window stamps the next uses within the future window: the first future
// batch that looks the row up (1 is the next batch).
func (tb *table) window(future [][]int64, lo, hi int64) {
	for j, ids := range future {
		for _, row := range ids[lo:hi] {
			if s, ok := tb.Lookup(row); ok && tb.stamp[s] != *tb.plans {
				tb.stamp[s] = *tb.plans
				tb.nextUse[s] = j + 1
				tb.take(s)
				tb.soonest = append(tb.soonest, s)
			}
		}
	}
}

// Hit holds s for this batch: out of never and of the window's candidates.
func (tb *table) Hit(s int32) {
	tb.take(s)
	if tb.stamp[s] != *tb.plans {
		tb.stamp[s] = *tb.plans
		tb.out = append(tb.out, s)
	}
	tb.nextUse[s] = -1
	*tb.clock++
	tb.last[s] = *tb.clock
}

// Victim is the least recently used slot no one uses within the window,
// else the window's slot with the farthest next use.
func (tb *table) Victim() (int32, bool) {
	if s, ok := tb.never.Pop(); ok {
		return s, true
	}
	return tb.farthest()
}

func (tb *table) Insert(s int32) { tb.Hit(s) }

// Release returns the batch's slots to never (or to the next batch's
// window, which recomputes it), keyed by their recency.
func (tb *table) Release() {
	for _, s := range tb.out {
		if !tb.never.Contains(s) {
			tb.never.Push(s, plankit.Key{Major: tb.last[s]})
		}
	}
	tb.out, tb.soonest = tb.out[:0], tb.soonest[:0]
	tb.sorted, tb.consumed = false, 0
}

// policy holds no window (plankit.Windowless: its Needs are zero), so the
// host keeps it to sequential graphs when they have Storage.
type policy struct {
	plankit.Guard
	plankit.Windowless
	tables []*table
	clock  uint64
	plans  uint64
}

// New returns a Belady policy; Configure gives it its capacity.
func New() cache.Cache { return &policy{} }

func (p *policy) Info(context.Context) (plugin.Info, error) {
	return plankit.Info(Name, Version,
		"Belady's optimal replacement over the host's future window (farthest next use, else LRU): the upper bound on hit rate",
		fields()), nil
}

func (p *policy) Configure(_ context.Context, setup plugin.Setup) error {
	return plankit.ConfigureTables(&p.Guard, setup, func(c int32) *table { return newTable(c, &p.plans, &p.clock) },
		func(tables []*table) { p.tables, p.clock, p.plans = tables, 0, 0 })
}

func (p *policy) Plan(_ context.Context, req *cache.PlanRequest) (*cache.PlanResult, error) {
	return p.Guard.Plan(Name, req, func(b *cache.Batch) (*cache.PlanResult, error) {
		future, err := p.Guard.Future(req)
		if err != nil {
			return nil, fmt.Errorf("belady: %w", err)
		}
		p.plans++
		// Tables are independent, so every table's window can be stamped
		// before any is planned.
		for t, tb := range p.tables {
			lo, hi := b.Table(t)
			tb.window(future, lo, hi)
		}
		return plankit.TwoPass(b, p.tables), nil
	})
}
