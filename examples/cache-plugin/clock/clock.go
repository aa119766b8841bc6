// Package clock is a CLOCK (second-chance) cache policy written on sdk/
// only, as a third-party author would; sdk/cache/plankit does what every
// policy does, so this is the policy alone. Per table, a hand sweeps a
// circle of slots for a victim, clearing reference bits as it passes and
// skipping the batch's own slots. It holds no pipeline window: zero Needs.
package clock

import (
	"context"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/plankit"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Config is the policy's options: what the host fills (capacity, its
// windows) and whether a new row starts with its reference bit set.
type Config struct {
	plankit.HostOptions
	// InsertReferenced gives a new row its second chance at once (classic
	// CLOCK); without it, a row not looked up again is the first to go.
	InsertReferenced bool `json:"insert_referenced"`
}

// table is one table's circle of slots.
type table struct {
	plankit.Slots
	referenced []bool
	usedBy     []uint64 // the last plan (epoch) that used the slot
	used       int32    // slots the current plan uses
	hand       int32
	insertRef  bool
	epoch      *uint64
}

func (tb *table) Release() { tb.used = 0 }

// Hit references and holds the slot, unless this plan already used it (a
// second lookup of a row the batch inserted is not a reference).
func (tb *table) Hit(s int32) {
	if tb.usedBy[s] != *tb.epoch {
		tb.referenced[s] = true
		tb.usedBy[s], tb.used = *tb.epoch, tb.used+1
	}
}

// Insert holds slot s, which this plan has not used: fresh, or a victim.
func (tb *table) Insert(s int32) {
	tb.referenced[s] = tb.insertRef
	tb.usedBy[s], tb.used = *tb.epoch, tb.used+1
}

// Victim sweeps to the first slot neither used by this plan nor referenced
// since the hand last passed; one slot is not used, so it stops in two turns.
func (tb *table) Victim() (int32, bool) {
	n := tb.Cap()
	if tb.used == n {
		return 0, false
	}
	for {
		s := tb.hand
		tb.hand = (tb.hand + 1) % n
		switch {
		case tb.usedBy[s] == *tb.epoch: // held for this batch
		case tb.referenced[s]:
			tb.referenced[s] = false // second chance
		default:
			return s, true
		}
	}
}

type clock struct {
	plankit.Guard
	tables []*table
	epoch  uint64
}

// New returns a CLOCK policy; Configure gives it its capacity.
func New() cache.Cache { return &clock{} }

func (c *clock) Info(context.Context) (plugin.Info, error) {
	return plankit.Info("clock", "0.2.0", "CLOCK (second-chance) replacement per table; example third-party plugin built only on sdk/",
		append(plankit.HostFields(), plugin.Field{Name: "insert_referenced", Type: "bool", Default: "true", Description: "give a newly inserted row its second chance at once"})), nil
}

// Needs declares nothing (CLOCK holds no window) and checks the options.
func (c *clock) Needs(_ context.Context, setup plugin.Setup) (cache.Needs, error) {
	return cache.Needs{}, plankit.Decode(setup, &Config{})
}

func (c *clock) Configure(_ context.Context, setup plugin.Setup) error {
	cfg := Config{InsertReferenced: true}
	if err := plankit.Decode(setup, &cfg); err != nil {
		return err
	}
	tables, err := plankit.PerTable(cfg.Capacity, setup.Tables, func(_ int, n int32) *table {
		return &table{Slots: plankit.NewSlots(n), referenced: make([]bool, n), usedBy: make([]uint64, n), insertRef: cfg.InsertReferenced, epoch: &c.epoch}
	})
	if err != nil {
		return err
	}
	c.Guard.Configure(setup.Tables, func() { c.tables, c.epoch = tables, 0 })
	return nil
}

func (c *clock) Plan(_ context.Context, req *cache.PlanRequest) (*cache.PlanResult, error) {
	return c.Guard.Plan("clock", req, func(b *cache.Batch) (*cache.PlanResult, error) {
		c.epoch++
		return plankit.TwoPass(b, c.tables), nil
	})
}
