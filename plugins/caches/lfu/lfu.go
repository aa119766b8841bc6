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
	"fmt"
	"math"
	"sync"

	"github.com/flowrun/flowrun/plugins/caches/internal/planreq"
	"github.com/flowrun/flowrun/plugins/caches/internal/slotheap"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// Name is the policy's plugin name (builtin:lfu).
const Name = "lfu"

// Version is this plugin's version.
const Version = "0.1.0"

// table is one table's cache.
type table struct {
	slotOf map[int64]int32
	rowOf  []int64
	// count is the lookups of the slot's row since it was inserted; last
	// is the clock of its latest lookup (the tie-break).
	count, last []uint64
	// candidates are the filled slots the current batch does not use.
	candidates *slotheap.Heap
	// used lists the slots the current batch took out of candidates.
	used   []int32
	filled int32
}

func newTable(capacity int32) *table {
	return &table{
		slotOf:     make(map[int64]int32, capacity),
		rowOf:      make([]int64, capacity),
		count:      make([]uint64, capacity),
		last:       make([]uint64, capacity),
		candidates: slotheap.New(capacity),
	}
}

// use counts a lookup of slot s's row and keeps s out of the candidates
// for the rest of the batch.
func (tb *table) use(s int32, clock uint64) {
	if tb.candidates.Remove(s) {
		tb.used = append(tb.used, s)
	}
	tb.count[s]++
	tb.last[s] = clock
}

// release puts the batch's slots back among the candidates, keyed by their
// new counts.
func (tb *table) release() {
	for _, s := range tb.used {
		tb.candidates.Push(s, slotheap.Key{Major: tb.count[s], Minor: tb.last[s]})
	}
	tb.used = tb.used[:0]
}

type policy struct {
	mu     sync.Mutex
	mapper region.Mapper
	setup  []plugin.Table
	tables []*table // nil until Configure
	clock  uint64
}

// New returns an LFU policy; Configure gives it its capacity.
func New() cache.Cache { return &policy{} }

func (p *policy) Info(context.Context) (plugin.Info, error) {
	return plugin.Info{
		Kind:        plugin.KindCache,
		Name:        Name,
		Version:     Version,
		APIVersion:  plugin.APIVersion,
		Description: "per-table LFU over capacity rows (ties by LRU); evicts only rows the current batch does not use, bypasses the excess",
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
	p.clock = 0
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
		return nil, fmt.Errorf("lfu: %w", err)
	}
	res := &cache.PlanResult{Tables: make([]cache.TableStats, len(p.tables))}
	for t, tb := range p.tables {
		lo, hi := b.Table(t)
		st := &res.Tables[t]
		// Pass 1: hits, so that no miss of this batch evicts one of them.
		for i := lo; i < hi; i++ {
			s, ok := tb.slotOf[b.IDs[i]]
			if !ok {
				b.Hits[i] = 0
				continue
			}
			p.clock++
			tb.use(s, p.clock)
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
			p.clock++
			if s, ok := tb.slotOf[row]; ok { // inserted earlier in this batch
				tb.use(s, p.clock)
				b.Slots[i] = int64(s)
				continue
			}
			var s int32
			if tb.filled < int32(len(tb.rowOf)) {
				s = tb.filled
				tb.filled++
			} else if v, ok := tb.candidates.Pop(); ok {
				s = v
				old := tb.rowOf[s]
				delete(tb.slotOf, old)
				w := b.Victims[3*res.Victims : 3*res.Victims+3]
				w[0], w[1], w[2] = int64(t), old, int64(s)
				res.Victims++
				st.Evictions++
			} else {
				// Every slot holds a row of this batch: bypass.
				b.Slots[i] = -1
				continue
			}
			tb.rowOf[s] = row
			tb.slotOf[row] = s
			tb.count[s] = 0
			tb.used = append(tb.used, s)
			tb.use(s, p.clock)
			b.Slots[i] = int64(s)
		}
		tb.release()
	}
	return res, nil
}
