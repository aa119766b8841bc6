// Package static is the static top-N embedding cache of Yin et al., the
// baseline of ScratchPipe's Fig. 4(b) and Sec. VI: per table, the N most
// frequently accessed rows (N = capacity) live in the device cache for the
// whole run and are never evicted; every other row is a miss served from,
// and trained in, the host table.
//
// The top-N come from a profile: the frequencies the host passes (the
// dataset's own access PDF, or a warm-up pass the host ran), or the IDs of
// the first warmup_batches batches the policy plans, which bypass the
// cache while it counts. Once profiled, each hot row has a fixed slot (its
// rank: slot 0 is the hottest row). Its first lookup is a miss that fills
// the slot; later lookups hit. Cold rows always bypass (slot -1). No batch
// ever reports a victim.
//
// A table whose capacity covers all its rows needs no profile: row r lives
// in slot r from the first batch on.
//
// Profiling the first batches needs a sequential graph: in a pipelined one
// (the host sends a past window), a hot row filled right after the warm-up
// would be read from the host while warm-up batches still in flight train
// it there, and a hot row looked up every batch could never wait them out.
// The policy refuses that setup; a pipelined graph profiles from the host's
// frequencies, which leave no row trained on the host before its fill.
package static

import (
	"context"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/plankit"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// Name is the policy's plugin name (builtin:static).
const Name = "static"

// Version is this plugin's version.
const Version = "0.1.0"

// table is one table's static cache.
type table struct {
	// whole: the capacity covers every row, slot = row.
	whole bool
	// HitMap maps each hot row to its slot; nil until profiled.
	HitMap map[int64]int32
	// filledAt is, per slot, the plan that first filled it (0: not yet).
	filledAt []uint64
	// count is the warm-up's lookups per row.
	count map[int64]uint64
}

type policy struct {
	plankit.Guard
	cfg      Config
	tables   []*table // nil until Configure
	plans    uint64   // plans answered, the current one included
	profiled bool
}

// New returns a static top-N policy; Configure gives it its capacity and
// profile.
func New() cache.Cache { return &policy{} }

func (p *policy) Info(context.Context) (plugin.Info, error) {
	return plankit.Info(Name, Version,
		"static top-N cache (Yin et al., ScratchPipe Fig. 4b): the capacity most frequent rows per table, profiled from the host's frequencies or the first batches, never evicted; the rest bypass",
		fields()), nil
}

// Needs declares that the policy holds every window (it never evicts) and,
// when its options ask for the host's frequencies without giving them, the
// warm-up batches the host profiles (uncapped: Setup does not say how many
// training batches the run has, so the host caps it). It checks the options
// as Configure will once the host has filled the frequencies.
func (p *policy) Needs(_ context.Context, setup plugin.Setup) (cache.Needs, error) {
	cfg := defaultConfig()
	return plankit.NeedsOfProfiled(setup, &cfg)
}

func (p *policy) Configure(_ context.Context, setup plugin.Setup) error {
	cfg := defaultConfig()
	if err := plankit.Decode(setup, &cfg); err != nil {
		return err
	}
	tables, err := plankit.PerTable(cfg.Capacity, setup.Tables, func(t int, c int32) *table {
		tb := &table{whole: cfg.Capacity >= setup.Tables[t].Rows, filledAt: make([]uint64, c)}
		if !tb.whole {
			tb.count = map[int64]uint64{}
		}
		return tb
	})
	if err != nil {
		return err
	}
	profiled := cfg.profile() == ProfileFrequencies
	if profiled {
		if err := readFrequencies(*cfg.Frequencies, setup.Tables, tables); err != nil {
			return err
		}
		selectHot(tables, cfg.Capacity)
	}
	p.Guard.Configure(setup.Tables, func() {
		p.cfg, p.tables, p.plans, p.profiled = cfg, tables, 0, profiled
	})
	return nil
}

// readFrequencies adds the host's (table, row, count) triples to the
// tables' counts.
func readFrequencies(ref region.Ref, setup []plugin.Table, tables []*table) error {
	return plankit.ReadFrequencies(ref, setup, func(t int, row, n int64) {
		if tb := tables[t]; !tb.whole {
			tb.count[row] += uint64(n)
		}
	})
}

// selectHot fixes each table's top-N: the rows with the highest counts
// (never a row with count 0), ties by the lower row, slot by rank.
func selectHot(tables []*table, capacity int64) {
	for _, tb := range tables {
		if tb.whole {
			continue
		}
		rows := plankit.RankRows(tb.count)
		rows = rows[:min(int64(len(rows)), capacity)]
		tb.HitMap = make(map[int64]int32, len(rows))
		for s, rc := range rows {
			tb.HitMap[rc.Row] = int32(s)
		}
		tb.count = nil
	}
}

func (p *policy) Plan(_ context.Context, req *cache.PlanRequest) (*cache.PlanResult, error) {
	return p.Guard.Plan(Name, req, func(b *cache.Batch) (*cache.PlanResult, error) {
		return p.plan(req, b)
	})
}

// plan plans the checked batch b; the Guard holds the lock.
func (p *policy) plan(req *cache.PlanRequest, b *cache.Batch) (*cache.PlanResult, error) {
	p.plans++
	now := p.plans
	res := &cache.PlanResult{Tables: make([]cache.TableStats, len(p.tables))}
	for t, tb := range p.tables {
		lo, hi := b.Table(t)
		st := &res.Tables[t]
		for i := lo; i < hi; i++ {
			row := b.IDs[i]
			b.Hits[i] = 0
			b.Slots[i] = -1
			var s int32
			switch {
			case tb.whole:
				s = int32(row)
			case !p.profiled: // warm-up: count, bypass
				tb.count[row]++
				st.Misses++
				continue
			default:
				hot, ok := tb.HitMap[row]
				if !ok { // cold: served by the host table
					st.Misses++
					continue
				}
				s = hot
			}
			b.Slots[i] = int64(s)
			switch tb.filledAt[s] {
			case 0: // the row's first lookup fills its slot
				tb.filledAt[s] = now
				st.Misses++
			case now: // a duplicate of this batch's fill
				st.Misses++
			default:
				b.Hits[i] = 1
				st.Hits++
			}
		}
	}
	if !p.profiled && now >= uint64(p.cfg.WarmupBatches) {
		selectHot(p.tables, p.cfg.Capacity)
		p.profiled = true
	}
	return res, nil
}
