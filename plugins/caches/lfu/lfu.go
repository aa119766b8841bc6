// Package lfu is a per-table least-frequently-used cache policy, the other
// replacement policy (besides LRU) that ScratchPipe's sensitivity study
// (Sec. VI-E) and the mixed-precision cache compare.
//
// Each table has Capacity slots and counts, for every cached row, how many
// lookups it has had since it entered the cache (duplicates within a batch
// included). A batch is planned in two passes, with the same slot and
// victim semantics as package lru:
//
//  1. every ID already cached is a hit; its count goes up and its slot is
//     taken out of the eviction candidates for this batch;
//  2. every other ID, in request order, takes the next never-used slot or
//     evicts the candidate with the smallest count, the least recently
//     used among equal counts. When no candidate is left (every slot holds
//     a row of this batch), the ID bypasses the cache (slot -1).
//
// Candidates are an indexed min-heap keyed by (count, last use), so each
// lookup costs O(log capacity); the outcome depends only on the sequence
// of requests.
package lfu

import (
	"context"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/plankit"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Name is the policy's plugin name (builtin:lfu).
const Name = "lfu"

// Version is this plugin's version.
const Version = "0.1.0"

// table is one table's cache.
type table struct {
	plankit.Slots
	// count is the lookups of the slot's row since it was inserted; last
	// is the clock of its latest lookup (the tie-break).
	count, last []uint64
	// candidates are the filled slots the current batch does not use.
	candidates *plankit.SlotHeap
	// used lists the slots the current batch took out of candidates.
	used  []int32
	clock *uint64
}

func newTable(capacity int32, clock *uint64) *table {
	return &table{
		Slots:      plankit.NewSlots(capacity),
		count:      make([]uint64, capacity),
		last:       make([]uint64, capacity),
		candidates: plankit.NewSlotHeap(capacity),
		clock:      clock,
	}
}

// Tick advances the clock once per lookup.
func (tb *table) Tick() { *tb.clock++ }

// Hit counts a lookup of slot s's row and keeps s out of the candidates
// for the rest of the batch.
func (tb *table) Hit(s int32) {
	if tb.candidates.Remove(s) {
		tb.used = append(tb.used, s)
	}
	tb.count[s]++
	tb.last[s] = *tb.clock
}

// Victim is the candidate with the smallest count, the least recently used
// among equal counts.
func (tb *table) Victim() (int32, bool) { return tb.candidates.Pop() }

func (tb *table) Insert(s int32) {
	tb.count[s] = 0
	tb.used = append(tb.used, s)
	tb.Hit(s)
}

// Release puts the batch's slots back among the candidates, keyed by their
// new counts.
func (tb *table) Release() {
	for _, s := range tb.used {
		tb.candidates.Push(s, plankit.Key{Major: tb.count[s], Minor: tb.last[s]})
	}
	tb.used = tb.used[:0]
}

// policy holds no window (plankit.Windowless: its Needs are zero), so the
// host keeps it to sequential graphs when they have Storage.
type policy struct {
	plankit.Guard
	plankit.Windowless
	tables []*table
	clock  uint64
}

// New returns an LFU policy; Configure gives it its capacity.
func New() cache.Cache { return &policy{} }

func (p *policy) Info(context.Context) (plugin.Info, error) {
	return plankit.Info(Name, Version,
		"per-table LFU over capacity rows (ties by LRU); evicts only rows the current batch does not use, bypasses the excess",
		fields()), nil
}

func (p *policy) Configure(_ context.Context, setup plugin.Setup) error {
	return plankit.ConfigureTables(&p.Guard, setup, func(c int32) *table { return newTable(c, &p.clock) },
		func(tables []*table) { p.tables, p.clock = tables, 0 })
}

func (p *policy) Plan(_ context.Context, req *cache.PlanRequest) (*cache.PlanResult, error) {
	return p.Guard.Plan(Name, req, func(b *cache.Batch) (*cache.PlanResult, error) {
		return plankit.TwoPass(b, p.tables), nil
	})
}
