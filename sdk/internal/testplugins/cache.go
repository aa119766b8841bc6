package testplugins

import (
	"context"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/plankit"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// LRU is a per-table least-recently-used cache policy. Rows of the batch
// being planned are never evicted by it; when a table has more distinct rows
// in one batch than free or evictable slots, the rest bypass the cache.
type LRU struct {
	// guard serialises Configure and Plan and checks each request
	// (plankit.Guard, as a policy outside flowrun would).
	guard  plankit.Guard
	tables []lruTable
	tick   int64
}

type lruTable struct {
	slotOf  map[int64]int64 // row -> slot
	rowAt   []int64         // slot -> row, -1 when free
	lastUse []int64         // slot -> tick of last use
}

// NewLRU returns an unconfigured LRU.
func NewLRU() *LRU { return &LRU{} }

func (c *LRU) Info(context.Context) (plugin.Info, error) {
	return plugin.Info{
		Kind:        plugin.KindCache,
		Name:        "test-lru",
		Version:     "0.1.0",
		Description: "reference LRU policy for the SDK's tests",
		Config:      []plugin.Field{{Name: "capacity", Type: "int", Description: "rows per table"}},
	}, nil
}

func (c *LRU) Configure(_ context.Context, setup plugin.Setup) error {
	var opts cache.Options
	if err := plugin.DecodeOptions(setup.Options, &opts); err != nil {
		return err
	}
	if opts.Capacity < 0 {
		return plugin.FieldErrorf("capacity", "must be ≥ 0, got %d", opts.Capacity)
	}
	tables := make([]lruTable, len(setup.Tables))
	for i := range tables {
		rowAt := make([]int64, opts.Capacity)
		for s := range rowAt {
			rowAt[s] = -1
		}
		tables[i] = lruTable{slotOf: map[int64]int64{}, rowAt: rowAt, lastUse: make([]int64, opts.Capacity)}
	}
	c.guard.Configure(setup.Tables, func() { c.tables, c.tick = tables, 0 })
	return nil
}

func (c *LRU) Plan(_ context.Context, req *cache.PlanRequest) (*cache.PlanResult, error) {
	return c.guard.Plan("test-lru", req, c.plan)
}

// plan plans the checked batch b; the guard holds the lock.
func (c *LRU) plan(b *cache.Batch) (*cache.PlanResult, error) {
	ids, slots, hits, victims := b.IDs, b.Slots, b.Hits, b.Victims

	res := &cache.PlanResult{Tables: make([]cache.TableStats, len(c.tables))}
	c.tick++
	for t := range c.tables {
		tab := &c.tables[t]
		lo, hi := b.Table(t)
		type outcome struct {
			slot int64
			hit  byte
		}
		seen := map[int64]outcome{}
		for i := lo; i < hi; i++ {
			row := ids[i]
			o, ok := seen[row]
			if !ok {
				if s, cached := tab.slotOf[row]; cached {
					o = outcome{slot: s, hit: 1}
				} else {
					o = outcome{slot: tab.victimSlot(c.tick)}
					if o.slot >= 0 {
						if old := tab.rowAt[o.slot]; old >= 0 {
							delete(tab.slotOf, old)
							victims[3*res.Victims], victims[3*res.Victims+1], victims[3*res.Victims+2] = int64(t), old, o.slot
							res.Victims++
							res.Tables[t].Evictions++
						}
						tab.rowAt[o.slot] = row
						tab.slotOf[row] = o.slot
					}
				}
				if o.slot >= 0 {
					tab.lastUse[o.slot] = c.tick
				}
				seen[row] = o
			}
			slots[i], hits[i] = o.slot, o.hit
			if o.hit == 1 {
				res.Tables[t].Hits++
			} else {
				res.Tables[t].Misses++
			}
		}
	}
	return res, nil
}

// victimSlot picks a free slot, else the least recently used slot not
// touched by the current batch, else -1.
func (tab *lruTable) victimSlot(now int64) int64 {
	best := int64(-1)
	for s, row := range tab.rowAt {
		if row < 0 {
			return int64(s)
		}
		if tab.lastUse[s] == now {
			continue
		}
		if best < 0 || tab.lastUse[s] < tab.lastUse[best] {
			best = int64(s)
		}
	}
	return best
}
