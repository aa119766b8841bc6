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
	"fmt"
	"math"
	"sync"

	"github.com/flowrun/flowrun/plugins/caches/internal/planreq"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// Name is the policy's plugin name (builtin:lru).
const Name = "lru"

// Version is this plugin's version.
const Version = "0.1.0"

// nilSlot marks the end of the recency list.
const nilSlot = -1

// table is one table's cache: slot-indexed arrays plus a map from row to
// slot. prev and next link the slots from most (head) to least (tail)
// recently used.
type table struct {
	slotOf     map[int64]int32
	rowOf      []int64
	prev, next []int32
	// usedBy is the epoch of the last batch that used the slot; a slot whose
	// usedBy is the current epoch must not be evicted.
	usedBy     []uint64
	head, tail int32
	filled     int32 // slots [0, filled) hold rows
}

func newTable(capacity int32) *table {
	return &table{
		slotOf: make(map[int64]int32, capacity),
		rowOf:  make([]int64, capacity),
		prev:   make([]int32, capacity),
		next:   make([]int32, capacity),
		usedBy: make([]uint64, capacity),
		head:   nilSlot,
		tail:   nilSlot,
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

type policy struct {
	mu     sync.Mutex
	mapper region.Mapper
	setup  []plugin.Table
	tables []*table // nil until Configure
	epoch  uint64
}

// New returns an LRU policy; Configure gives it its capacity.
func New() cache.Cache { return &policy{} }

func (p *policy) Info(context.Context) (plugin.Info, error) {
	return plugin.Info{
		Kind:        plugin.KindCache,
		Name:        Name,
		Version:     Version,
		APIVersion:  plugin.APIVersion,
		Description: "per-table LRU over capacity rows; evicts only rows the current batch does not use, bypasses the excess",
		Config:      fields(),
	}, nil
}

func (p *policy) Configure(_ context.Context, setup plugin.Setup) error {
	var cfg Config
	if err := plugin.DecodeOptions(setup.Options, &cfg); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := planreq.CheckTables(setup.Tables); err != nil {
		return err
	}
	tables := make([]*table, len(setup.Tables))
	for t, tab := range setup.Tables {
		// A table never needs more slots than it has rows; capping here keeps
		// a generous capacity from allocating memory no row can use.
		c := min(cfg.Capacity, tab.Rows)
		if c > math.MaxInt32 {
			return fmt.Errorf("%w: capacity: %d rows for table %d exceeds %d", plugin.ErrInvalidConfig, c, t, math.MaxInt32)
		}
		tables[t] = newTable(int32(c))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setup = append([]plugin.Table{}, setup.Tables...)
	p.tables = tables
	p.epoch = 0
	return nil
}

func (p *policy) Plan(_ context.Context, req *cache.PlanRequest) (*cache.PlanResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tables == nil {
		return nil, plugin.ErrNotConfigured
	}
	b, err := planreq.View(&p.mapper, p.setup, req)
	if err != nil {
		return nil, fmt.Errorf("lru: %w", err)
	}
	p.epoch++
	res := &cache.PlanResult{Tables: make([]cache.TableStats, len(p.tables))}
	for t, tb := range p.tables {
		lo, hi := b.Table(t)
		st := &res.Tables[t]
		// Pass 1: hits. Marking them first is what keeps a later miss of
		// this batch from evicting a row an earlier position already hit.
		for i := lo; i < hi; i++ {
			s, ok := tb.slotOf[b.IDs[i]]
			if !ok {
				b.Hits[i] = 0
				continue
			}
			tb.usedBy[s] = p.epoch
			tb.touch(s)
			b.Slots[i] = int64(s)
			b.Hits[i] = 1
			st.Hits++
		}
		// Pass 2: misses, in request order.
		for i := lo; i < hi; i++ {
			if b.Hits[i] == 1 {
				continue
			}
			st.Misses++
			row := b.IDs[i]
			if s, ok := tb.slotOf[row]; ok { // inserted earlier in this batch
				tb.touch(s)
				b.Slots[i] = int64(s)
				continue
			}
			var s int32
			switch {
			case tb.filled < int32(len(tb.rowOf)):
				s = tb.filled
				tb.filled++
			case tb.tail != nilSlot && tb.usedBy[tb.tail] != p.epoch:
				s = tb.tail
				old := tb.rowOf[s]
				delete(tb.slotOf, old)
				tb.unlink(s)
				v := b.Victims[3*res.Victims : 3*res.Victims+3]
				v[0], v[1], v[2] = int64(t), old, int64(s)
				res.Victims++
				st.Evictions++
			default:
				// Every slot holds a row of this batch (or the table has no
				// slots): the row bypasses the cache.
				b.Slots[i] = -1
				continue
			}
			tb.rowOf[s] = row
			tb.slotOf[row] = s
			tb.usedBy[s] = p.epoch
			tb.pushFront(s)
			b.Slots[i] = int64(s)
		}
	}
	return res, nil
}
