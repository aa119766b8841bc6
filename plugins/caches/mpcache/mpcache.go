// Package mpcache is the full-precision cache of "Mixed-Precision
// Embedding Using a Cache" (Yang, Huang, Park, Tang and Tulloch, 2020,
// Sec. 3 and Algorithm 2): per table, an α-way set-associative cache of
// FP32 rows (n sets × α ways, row i in set h(i)), ranked by LFU (an
// access count per row) or LRU (the latest update's clock). A row enters
// only into a free way of its set or when its priority beats the set's
// lowest; otherwise it bypasses the cache and is trained in its host
// table (which, with low-precision host tables, is where the paper's
// down-conversion happens).
//
// Algorithm 2 runs over each batch's distinct rows in ascending order,
// before the batch trains; the plan then says where each row is after the
// batch (a slot, or -1), so the host's insert moves rows once per batch.
// What the paper leaves open (the hash, the sizes, the not-full set, the
// LRU clock, ties, rows evicted by a later row of their own batch) is
// decided in the README.
//
// The policy imports only sdk/; it is built on sdk/cache/plankit.
package mpcache

import (
	"context"
	"sync"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/plankit"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Name is the policy's plugin name (builtin:mpcache).
const Name = "mpcache"

// Version is this plugin's version.
const Version = "0.1.0"

// Policy is the mpcache cache policy.
type Policy struct {
	plankit.Guard
	cfg    Config
	tables []*table // nil until Configure
	plans  uint64   // the batch clock: plans answered, this one included
	tick   uint64   // the update clock (lru_clock: update)

	// mu is held by Plan and Configure while they change the tables, so
	// that the accessors read them whole (the Guard's lock is the kit's
	// own).
	mu sync.Mutex
}

// New returns an mpcache policy; Configure gives it its geometry.
func New() cache.Cache { return &Policy{} }

func (p *Policy) Info(context.Context) (plugin.Info, error) {
	return plankit.Info(Name, Version,
		"mixed-precision embedding's FP32 cache (Yang et al. 2020, Algorithm 2): α-way set-associative, LFU or LRU, a row enters a free way or replaces the set's lowest priority only when it beats it, else bypasses",
		fields()), nil
}

// Needs checks the options and declares the cache's memory per table
// (Eq. 2's cache terms, memory): nothing else, as the policy holds no
// window (sequential graphs only) and may bypass.
func (p *Policy) Needs(_ context.Context, setup plugin.Setup) (cache.Needs, error) {
	cfg := defaultConfig()
	if err := plankit.Decode(setup, &cfg); err != nil {
		return cache.Needs{}, err
	}
	mem, err := geometries(cfg, setup, func(t, sets, ways int) cache.TableMemory {
		return memory(cfg, setup.Tables[t], sets, ways)
	})
	return cache.Needs{Memory: mem}, err
}

// memory is Eq. 2's cache terms for a table of sets × ways FP32 rows of
// tab.Dim values: per cached row its values (M_C, 4·D bytes) and an INT32
// tag (M_tags); under LFU an INT32 access count per embedding row (M_cnt).
// These are the paper's arrays (Appendix A), not this Go policy's maps;
// LRU's clock per resident row is not in Eq. 2 and is not counted (README).
// A table without sets keeps neither tags nor counts.
func memory(cfg Config, tab plugin.Table, sets, ways int) cache.TableMemory {
	if sets == 0 {
		return cache.TableMemory{}
	}
	m := cache.TableMemory{CachedRows: int64(sets) * int64(ways), CachedRowBytes: 4*int64(tab.Dim) + 4}
	if cfg.Replacement == LFU {
		m.RowBytes = 4
	}
	return m
}

func (p *Policy) Configure(_ context.Context, setup plugin.Setup) error {
	cfg := defaultConfig()
	if err := plankit.Decode(setup, &cfg); err != nil {
		return err
	}
	tables, err := geometries(cfg, setup, func(_, sets, ways int) *table { return newTable(sets, ways) })
	if err != nil {
		return err
	}
	p.Guard.Configure(setup.Tables, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.cfg, p.tables, p.plans, p.tick = cfg, tables, 0, 0
	})
	return nil
}

func (p *Policy) Plan(_ context.Context, req *cache.PlanRequest) (*cache.PlanResult, error) {
	return p.Guard.Plan(Name, req, func(b *cache.Batch) (*cache.PlanResult, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.plans++
		res := &cache.PlanResult{Tables: make([]cache.TableStats, len(p.tables))}
		pl := &planner{cfg: p.cfg, now: p.plans, tick: &p.tick, b: b, res: res}
		for t, tb := range p.tables {
			tb.plan(pl, t)
		}
		res.Victims = pl.nVict
		return res, nil
	})
}

// Counts returns each table's counts since Configure.
func (p *Policy) Counts() []Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Counts, len(p.tables))
	for t, tb := range p.tables {
		out[t] = tb.counts
	}
	return out
}

// Events returns table t's Algorithm 2 steps in the latest plan, in IU
// order (nil before the first plan or for a table the run lacks).
func (p *Policy) Events(t int) []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t < 0 || t >= len(p.tables) {
		return nil
	}
	return append([]Event(nil), p.tables[t].last...)
}

// Tags returns table t's tag array IC after the latest plan: the row in
// each way (index set·ways + way), -1 for a free way; nil for a table the
// run lacks. A set's rows sit in its Storage slots in an order of their
// own (a row keeps its slot while it stays in the set).
func (p *Policy) Tags(t int) []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t < 0 || t >= len(p.tables) {
		return nil
	}
	return append([]int64(nil), p.tables[t].ic...)
}

// Geometry returns table t's sets and ways (0, 0: no cache).
func (p *Policy) Geometry(t int) (sets, ways int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t < 0 || t >= len(p.tables) {
		return 0, 0
	}
	return p.tables[t].sets, p.tables[t].ways
}
