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
	"math"
	"slices"
	"sync"

	"github.com/flowrun/flowrun/plugins/caches/internal/planreq"
	"github.com/flowrun/flowrun/plugins/caches/internal/slotheap"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// Name is the policy's plugin name (builtin:belady).
const Name = "belady"

// Version is this plugin's version.
const Version = "0.1.0"

// table is one table's cache.
type table struct {
	slotOf map[int64]int32
	rowOf  []int64
	last   []uint64 // clock of the slot's latest lookup
	filled int32
	// never holds the filled slots that neither the current batch nor the
	// future window uses (next use +∞), keyed by recency.
	never *slotheap.Heap
	// Per batch: the slots taken out of never, the next use of each slot
	// the window uses (stamped with the batch), and the window's slots by
	// farthest next use, consumed from the front.
	out      []int32
	stamp    []uint64
	nextUse  []int
	soonest  []int32
	sorted   bool
	consumed int
}

func newTable(capacity int32) *table {
	return &table{
		slotOf:  make(map[int64]int32, capacity),
		rowOf:   make([]int64, capacity),
		last:    make([]uint64, capacity),
		never:   slotheap.New(capacity),
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

// release returns the batch's slots to never (or to the next batch's
// window, which recomputes it), keyed by their recency.
func (tb *table) release() {
	for _, s := range tb.out {
		if !tb.never.Contains(s) {
			tb.never.Push(s, slotheap.Key{Major: tb.last[s]})
		}
	}
	tb.out, tb.soonest = tb.out[:0], tb.soonest[:0]
	tb.sorted, tb.consumed = false, 0
}

type policy struct {
	mu     sync.Mutex
	mapper region.Mapper
	setup  []plugin.Table
	tables []*table // nil until Configure
	clock  uint64
	plans  uint64
}

// New returns a Belady policy; Configure gives it its capacity.
func New() cache.Cache { return &policy{} }

func (p *policy) Info(context.Context) (plugin.Info, error) {
	return plugin.Info{
		Kind:        plugin.KindCache,
		Name:        Name,
		Version:     Version,
		APIVersion:  plugin.APIVersion,
		Description: "Belady's optimal replacement over the host's future window (farthest next use, else LRU): the upper bound on hit rate",
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
	p.clock, p.plans = 0, 0
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
		return nil, fmt.Errorf("belady: %w", err)
	}
	future, err := planreq.Future(&p.mapper, p.setup, req)
	if err != nil {
		return nil, fmt.Errorf("belady: %w", err)
	}
	p.plans++
	res := &cache.PlanResult{Tables: make([]cache.TableStats, len(p.tables))}
	for t, tb := range p.tables {
		lo, hi := b.Table(t)
		st := &res.Tables[t]
		// Next uses within the window: the first future batch that looks
		// the row up (1 is the next batch).
		for j, ids := range future {
			for _, row := range ids[lo:hi] {
				if s, ok := tb.slotOf[row]; ok && tb.stamp[s] != p.plans {
					tb.stamp[s] = p.plans
					tb.nextUse[s] = j + 1
					tb.take(s)
					tb.soonest = append(tb.soonest, s)
				}
			}
		}
		// use holds s for this batch: out of never and of the window's
		// candidates.
		use := func(s int32) {
			tb.take(s)
			if tb.stamp[s] != p.plans {
				tb.stamp[s] = p.plans
				tb.out = append(tb.out, s)
			}
			tb.nextUse[s] = -1
			p.clock++
			tb.last[s] = p.clock
		}
		// Pass 1: hits.
		for i := lo; i < hi; i++ {
			s, ok := tb.slotOf[b.IDs[i]]
			if !ok {
				b.Hits[i] = 0
				continue
			}
			use(s)
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
				use(s)
				b.Slots[i] = int64(s)
				continue
			}
			var s int32
			evict := true
			if tb.filled < int32(len(tb.rowOf)) {
				s, evict = tb.filled, false
				tb.filled++
			} else if v, ok := tb.never.Pop(); ok {
				s = v
			} else if v, ok := tb.farthest(); ok {
				s = v
			} else {
				// Every slot holds a row of this batch: bypass.
				b.Slots[i] = -1
				continue
			}
			if evict {
				old := tb.rowOf[s]
				delete(tb.slotOf, old)
				w := b.Victims[3*res.Victims : 3*res.Victims+3]
				w[0], w[1], w[2] = int64(t), old, int64(s)
				res.Victims++
				st.Evictions++
			}
			tb.rowOf[s] = row
			tb.slotOf[row] = s
			use(s)
			b.Slots[i] = int64(s)
		}
		tb.release()
	}
	return res, nil
}
