// Package lru is a per-table least-recently-used cache policy, the
// replacement policy ScratchPipe's scratchpad and the mixed-precision
// cache's set-associative baseline are compared with.
//
// Each table has Capacity slots. A batch is planned in two passes, so that
// all of the batch's rows are resident together when the batch trains:
//
//  1. every ID already cached is a hit; its slot is touched (moved to the
//     most recently used end of the recency list) and marked as used by
//     this batch;
//  2. every other ID, in request order, takes the next never-used slot or
//     evicts the least recently used row that this batch does not use. Used
//     slots always sit at the recent end of the list, so the least recently
//     used slot is either free to evict or proof that every slot is used by
//     this batch, in which case the ID bypasses the cache (slot -1).
//
// Every step is O(1) per lookup (a map from row to slot and an intrusive
// doubly linked list over slot-indexed arrays), and the outcome depends only
// on the sequence of requests.
package lru

import (
	"context"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/plankit"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Name is the policy's plugin name (builtin:lru).
const Name = "lru"

// Version is this plugin's version.
const Version = "0.1.0"

// nilSlot marks the end of the recency list.
const nilSlot = -1

// table is one table's cache: the resident rows plus slot-indexed arrays.
// prev and next link the slots from most (head) to least (tail) recently
// used.
type table struct {
	plankit.Slots
	prev, next []int32
	// usedBy is the epoch of the last batch that used the slot; a slot whose
	// usedBy is the current epoch must not be evicted.
	usedBy     []uint64
	head, tail int32
	epoch      *uint64
}

func newTable(capacity int32, epoch *uint64) *table {
	return &table{
		Slots:  plankit.NewSlots(capacity),
		prev:   make([]int32, capacity),
		next:   make([]int32, capacity),
		usedBy: make([]uint64, capacity),
		head:   nilSlot,
		tail:   nilSlot,
		epoch:  epoch,
	}
}

func (tb *table) unlink(s int32) {
	if p := tb.prev[s]; p != nilSlot {
		tb.next[p] = tb.next[s]
	} else {
		tb.head = tb.next[s]
	}
	if n := tb.next[s]; n != nilSlot {
		tb.prev[n] = tb.prev[s]
	} else {
		tb.tail = tb.prev[s]
	}
}

func (tb *table) pushFront(s int32) {
	tb.prev[s] = nilSlot
	tb.next[s] = tb.head
	if tb.head != nilSlot {
		tb.prev[tb.head] = s
	} else {
		tb.tail = s
	}
	tb.head = s
}

// touch makes s the most recently used slot.
func (tb *table) touch(s int32) {
	if tb.head == s {
		return
	}
	tb.unlink(s)
	tb.pushFront(s)
}

// Hit marks s as used by this batch and makes it the most recently used.
func (tb *table) Hit(s int32) {
	tb.usedBy[s] = *tb.epoch
	tb.touch(s)
}

// Victim is the least recently used slot, unless this batch uses it: used
// slots always sit at the recent end of the list, so then every slot is
// used by this batch.
func (tb *table) Victim() (int32, bool) {
	s := tb.tail
	if s == nilSlot || tb.usedBy[s] == *tb.epoch {
		return 0, false
	}
	tb.unlink(s)
	return s, true
}

func (tb *table) Insert(s int32) {
	tb.usedBy[s] = *tb.epoch
	tb.pushFront(s)
}

func (tb *table) Release() {}

// policy holds no window (plankit.Windowless: its Needs are zero), so the
// host keeps it to sequential graphs when they have Storage.
type policy struct {
	plankit.Guard
	plankit.Windowless
	tables []*table
	epoch  uint64
}

// New returns an LRU policy; Configure gives it its capacity.
func New() cache.Cache { return &policy{} }

func (p *policy) Info(context.Context) (plugin.Info, error) {
	return plankit.Info(Name, Version,
		"per-table LRU over capacity rows; evicts only rows the current batch does not use, bypasses the excess",
		fields()), nil
}

func (p *policy) Configure(_ context.Context, setup plugin.Setup) error {
	return plankit.ConfigureTables(&p.Guard, setup, func(c int32) *table { return newTable(c, &p.epoch) },
		func(tables []*table) { p.tables, p.epoch = tables, 0 })
}

func (p *policy) Plan(_ context.Context, req *cache.PlanRequest) (*cache.PlanResult, error) {
	return p.Guard.Plan(Name, req, func(b *cache.Batch) (*cache.PlanResult, error) {
		p.epoch++
		return plankit.TwoPass(b, p.tables), nil
	})
}
