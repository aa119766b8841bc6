// Package clock is a CLOCK (second-chance) cache policy, written as a
// third-party author would: against flowrun's sdk/ and the standard library
// only. The command in the parent directory serves it as a plugin binary;
// flowrun also links it in as builtin:clock.
//
// Per table, capacity slots form a circle with a reference bit each and a
// hand that sweeps for a victim, clearing set bits as it passes (the second
// chance). A batch's hits are found first and held, so that no miss of the
// same batch evicts them; when every slot holds a row of the batch, the
// excess bypasses the cache (slot -1).
package clock

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// clockTable is one table's cache: capacity slots arranged in a circle, a
// reference bit per slot, and a hand that sweeps the circle looking for a
// victim. A slot with its reference bit set gets a second chance: the hand
// clears the bit and moves on.
type clockTable struct {
	slotOf     map[int64]int64 // row -> slot
	rowOf      []int64
	referenced []bool
	// usedBy is the last batch (epoch) that looked the slot's row up. The
	// hand never evicts a row of the current batch, so a batch's rows are
	// all resident together when it trains.
	usedBy []uint64
	used   int64 // slots used by the current batch
	filled int64 // slots [0, filled) hold rows
	hand   int64
}

// clock is the policy: one clockTable per embedding table.
type clock struct {
	mu     sync.Mutex
	mapper region.Mapper // maps the host's shared-memory regions, once each
	cfg    config
	tables []*clockTable // nil until Configure
	epoch  uint64
	// setupTables are the run's tables from Setup; the IDs of a request
	// must be rows of them.
	setupTables []plugin.Table
}

// New returns a CLOCK policy; Configure gives it its capacity.
func New() cache.Cache { return &clock{} }

func (c *clock) Info(context.Context) (plugin.Info, error) {
	return plugin.Info{
		Kind:        plugin.KindCache,
		Name:        "clock",
		Version:     "0.1.0",
		APIVersion:  plugin.APIVersion,
		Description: "CLOCK (second-chance) replacement per table; example third-party plugin built only on sdk/",
		Config:      configFields(),
	}, nil
}

func (c *clock) Configure(_ context.Context, setup plugin.Setup) error {
	cfg := defaultConfig()
	if err := plugin.DecodeOptions(setup.Options, &cfg); err != nil {
		return err // already wraps plugin.ErrInvalidConfig
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	tables := make([]*clockTable, len(setup.Tables))
	for t, tab := range setup.Tables {
		if tab.Rows < 0 {
			return fmt.Errorf("%w: table %d has %d rows", plugin.ErrInvalidConfig, t, tab.Rows)
		}
		n := min(cfg.Capacity, tab.Rows) // never more slots than rows
		tables[t] = &clockTable{
			slotOf:     make(map[int64]int64, n),
			rowOf:      make([]int64, n),
			referenced: make([]bool, n),
			usedBy:     make([]uint64, n),
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cfg, c.setupTables, c.tables, c.epoch = cfg, slices.Clone(setup.Tables), tables, 0
	return nil
}

// Plan decides every ID of one batch, in two passes per table: first the
// hits (so that no miss can evict a row this batch still needs), then the
// misses in request order.
func (c *clock) Plan(_ context.Context, req *cache.PlanRequest) (*cache.PlanResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tables == nil {
		return nil, plugin.ErrNotConfigured
	}
	// View checks the request against the tables and maps its arrays; it
	// changes nothing, so a bad request leaves the cache as it was.
	b, err := req.View(&c.mapper, c.setupTables)
	if err != nil {
		return nil, fmt.Errorf("clock: %w", err)
	}
	c.epoch++
	res := &cache.PlanResult{Tables: make([]cache.TableStats, len(c.tables))}
	for t, tb := range c.tables {
		st := &res.Tables[t]
		lo, hi := b.Table(t)
		tb.used = 0
		for i := lo; i < hi; i++ { // pass 1: hits
			s, ok := tb.slotOf[b.IDs[i]]
			if !ok {
				b.Hits[i] = 0
				continue
			}
			tb.markUsed(s, c.epoch)
			tb.referenced[s] = true
			b.Slots[i], b.Hits[i] = s, 1
			st.Hits++
		}
		for i := lo; i < hi; i++ { // pass 2: misses
			if b.Hits[i] == 1 {
				continue
			}
			st.Misses++
			row := b.IDs[i]
			if s, ok := tb.slotOf[row]; ok { // inserted earlier in this batch
				b.Slots[i] = s
				continue
			}
			s, victim := tb.place(c.epoch)
			if s < 0 { // every slot holds a row of this batch: bypass
				b.Slots[i] = -1
				continue
			}
			if victim >= 0 {
				delete(tb.slotOf, victim)
				v := b.Victims[3*res.Victims:]
				v[0], v[1], v[2] = int64(t), victim, s
				res.Victims++
				st.Evictions++
			}
			tb.rowOf[s] = row
			tb.slotOf[row] = s
			tb.referenced[s] = c.cfg.InsertReferenced
			tb.markUsed(s, c.epoch)
			b.Slots[i] = s
		}
	}
	return res, nil
}

func (tb *clockTable) markUsed(s int64, epoch uint64) {
	if tb.usedBy[s] != epoch {
		tb.usedBy[s] = epoch
		tb.used++
	}
}

// place finds a slot for a new row: a never-used slot while there is one,
// else the first slot under the hand that is neither used by this batch
// nor referenced since the hand last passed (clearing reference bits on the
// way). It returns the slot and the row it evicts (-1: none), or slot -1
// when every slot is used by this batch. Because one slot at least is not
// used by the batch, the hand stops within two turns.
func (tb *clockTable) place(epoch uint64) (slot, victim int64) {
	n := int64(len(tb.rowOf))
	if tb.filled < n {
		tb.filled++
		return tb.filled - 1, -1
	}
	if tb.used == n { // also covers a table with no slots
		return -1, -1
	}
	for {
		s := tb.hand
		tb.hand = (tb.hand + 1) % n
		switch {
		case tb.usedBy[s] == epoch:
			// held for this batch: not a candidate, and its bit is kept
		case tb.referenced[s]:
			tb.referenced[s] = false // second chance
		default:
			return s, tb.rowOf[s]
		}
	}
}
