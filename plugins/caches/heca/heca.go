// Package heca is HECA's GPU embedding cache (Wu, Zhao and Chen,
// Electronics 2024, Sec. 5.3–5.7, Algorithm 1): per table, a static hot
// part, the rows that carry hot_coverage of a frequency profile, placed
// for the run and never evicted, and a dynamic part, a linear-probing hash
// table (the Cache Hash Table, CHT) whose replacement never touches a row
// of the current batch (CB), of the next batch (NB) or a hot row; a row
// with no candidate to replace bypasses the cache (slot -1).
//
// The two parts share a table's capacity: hot rows take slots [0, H) by
// rank, the CHT's entry i is slot H + i. What the paper leaves open or
// prints wrong (the unbounded probe, the hash, the split, what "search
// from index" means) is decided in the README, each with the spec's tag.
//
// The policy imports only sdk/; it is built on sdk/cache/plankit.
package heca

import (
	"context"
	"math"
	"sync"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/plankit"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Name is the policy's plugin name (builtin:heca).
const Name = "heca"

// Version is this plugin's version.
const Version = "0.1.0"

// Policy is the heca cache policy.
type Policy struct {
	plankit.Guard
	cfg    Config
	tables []*table // nil until Configure
	plans  uint64   // plans answered, the current one included

	// mu guards counts, a copy of the tables' counts after the latest
	// plan, for Counts (the Guard's lock is the kit's own).
	mu     sync.Mutex
	counts []Counts
}

// New returns a heca policy; Configure gives it its capacity and profile.
func New() cache.Cache { return &Policy{} }

func (p *Policy) Info(context.Context) (plugin.Info, error) {
	return plankit.Info(Name, Version,
		"HECA (Wu et al. 2024, Algorithm 1): a hot static part (rows covering hot_coverage of a profile, never evicted) and a dynamic linear-probing hash table whose replacement spares the current and next batch; bypass when nothing can be replaced",
		fields()), nil
}

// Needs declares the warm-up profile the hot part wants (when the graph
// gives no frequencies) and that the policy holds the host's windows:
// Algorithm 1's current batch is read as every batch still in flight
// (the past window) and its next batch as every future batch
// (Config.HoldsWindows; README, "Windows"). It may bypass.
func (p *Policy) Needs(_ context.Context, setup plugin.Setup) (cache.Needs, error) {
	cfg := defaultConfig()
	return plankit.NeedsOfProfiled(setup, &cfg)
}

func (p *Policy) Configure(_ context.Context, setup plugin.Setup) error {
	cfg := defaultConfig()
	if err := plankit.Decode(setup, &cfg); err != nil {
		return err
	}
	var counts []map[int64]int64
	if ref := cfg.frequencies(); ref != nil {
		var err error
		if counts, err = readFrequencies(*ref, setup.Tables); err != nil {
			return err
		}
	}
	tables, err := plankit.PerTable(cfg.Capacity, setup.Tables, func(t int, slots int32) *table {
		var hot map[int64]int32
		if counts != nil {
			limit := int(math.Floor(cfg.HotMaxFraction * float64(slots)))
			hot = selectHot(counts[t], cfg.coverage(), cfg.HotMinCount, limit)
		}
		return newTable(slots, hot)
	})
	if err != nil {
		return err
	}
	p.Guard.Configure(setup.Tables, func() {
		p.cfg, p.tables, p.plans = cfg, tables, 0
		p.mu.Lock()
		p.counts = nil
		p.mu.Unlock()
	})
	return nil
}

func (p *Policy) Plan(_ context.Context, req *cache.PlanRequest) (*cache.PlanResult, error) {
	return p.Guard.Plan(Name, req, func(b *cache.Batch) (*cache.PlanResult, error) {
		future, err := p.Guard.Future(req)
		if err != nil {
			return nil, err
		}
		p.plans++
		res := &cache.PlanResult{Tables: make([]cache.TableStats, len(p.tables))}
		pl := &planner{now: p.plans, res: res, b: b, hash: func(key int64, size int) int {
			return Hash(p.cfg.Hash, p.cfg.HashSeed, key, size)
		}}
		next := make([][]int64, len(future))
		for t, tb := range p.tables {
			pl.t = int64(t)
			lo, hi := b.Table(t)
			for f := range future { // NB first, then the batches after it
				next[f] = future[f][lo:hi]
			}
			tb.plan(pl, next, p.cfg.Past)
		}
		res.Victims = pl.victim
		p.mu.Lock()
		p.counts = p.counts[:0]
		for _, tb := range p.tables {
			p.counts = append(p.counts, tb.counts)
		}
		p.mu.Unlock()
		return res, nil
	})
}

// Counts returns each table's counts since Configure, per lookup and per
// unique key (each batch's share of them reaches the host in
// cache.TableStats: DistinctHits, DistinctMisses, HotLookups).
func (p *Policy) Counts() []Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Counts(nil), p.counts...)
}
