// Package scratchpipe is ScratchPipe's [Plan] controller (Sec. IV-C, IV-D,
// Algorithm 1): the GPU scratchpad's Hit-Map and Hold mask, which make
// every lookup of a batch hit in Storage by the time the batch trains, and
// keep the pipelined batches around it from reading or evicting each
// other's rows.
//
// Per table:
//
//   - HitMap maps a row to its Storage slot. It is updated here, at plan
//     time; Storage itself (the rows, on the "gpu" device) lives in the host
//     and changes only when the batch reaches [Insert]. The Hit-Map
//     therefore runs ahead of Storage by the depth of the pipeline, which is
//     what lets a batch see the cache as it will be when it trains.
//   - HoldMask has one bitmask per slot over past_window+1+future_window
//     batches. Bit past_window is the batch being planned, the bits below it
//     the past batches, the bits above it the future ones. Step B shifts
//     every mask right by one per planned batch; Step C sets the current
//     bit of every slot the batch hits or fills. Before Step C, the slots of
//     rows that the request's future batches look up and that are already
//     cached get the bit of that future batch, so the current batch cannot
//     evict a row one of them is about to read from the host (RAW hazard 4).
//   - A slot is a victim candidate only while its mask is 0: none of the
//     past_window batches before it (still between [Collect] and the end of
//     [Train]: RAW hazards 2 and 3), the current batch or the future window
//     uses it. Among candidates the victim is chosen by LRU (default), LFU
//     (ties by LRU) or at random (seeded from the run's seed).
//
// A miss with no candidate left is not bypassed: ScratchPipe's scratchpad
// must always hit, and a too-small one is a configuration error (the host
// rejects it up front from the worst case of the window). The policy checks
// every table of a batch before changing anything, and answers an error
// wrapping plugin.ErrInvalidRequest that names the batch, the table and the
// capacity the table would need; its state is then as before the request.
package scratchpipe

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/plankit"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Name is the policy's plugin name (builtin:scratchpipe).
const Name = "scratchpipe"

// Version is this plugin's version.
const Version = "0.1.0"

// table is one table's scratchpad controller. The batch is planned by
// plankit.TwoPass (hits held first, then misses in request order); table
// supplies the Hold mask and the victim order.
type table struct {
	// HitMap maps a row to the slot it will occupy once every planned
	// batch has inserted, and back.
	HitMap   plankit.Slots
	HoldMask []uint64
	// expiring counts the filled slots whose mask is exactly 1: held only
	// by the oldest batch of the window, so the next Step B frees them.
	// With the victim candidates (mask 0) it is what the capacity check
	// may evict, without a scan of its own: the one scan of the masks per
	// batch is Step B's.
	expiring int64
	// last is the clock of a slot's latest lookup, count its lookups since
	// its row was inserted: the LRU and LFU keys.
	last, count []uint64
	victims     victimSet
	// current is the Hold mask bit of the batch being planned (bit
	// past_window, as a mask); clock is the policy's, shared by its
	// tables.
	current uint64
	clock   *uint64
	// starved is set when a miss found no un-held slot, which the capacity
	// check rules out.
	starved bool

	// Scratch for the capacity check: the check that last counted a slot,
	// the rows a batch misses, and the slot (-1: none) of each ID of the
	// future window and of the batch, which Plan then holds and
	// plankit.TwoPass plans without looking them up again. aheadSeq is the batch of
	// ahead's first window, whose slots the next check tries first; spare
	// is the buffer ahead alternates with.
	checked  []uint64
	missing  plankit.RowIndex
	ahead    []int32
	aheadSeq uint64
	spare    []int32
	found    []int32
}

func newTable(capacity int32, victim string, rng *rand.Rand, past int, clock *uint64) *table {
	tb := &table{
		HitMap:   plankit.NewSlots(capacity),
		HoldMask: make([]uint64, capacity),
		last:     make([]uint64, capacity),
		count:    make([]uint64, capacity),
		current:  1 << past,
		clock:    clock,
		checked:  make([]uint64, capacity),
		missing:  plankit.NewRowIndex(0),
	}
	switch victim {
	case VictimLFU:
		tb.victims = &keyedVictims{heap: plankit.NewSlotHeap(capacity), key: func(s int32) plankit.Key {
			return plankit.Key{Major: tb.count[s], Minor: tb.last[s]}
		}}
	case VictimRandom:
		tb.victims = newRandomVictims(capacity, rng)
	default:
		tb.victims = &keyedVictims{heap: plankit.NewSlotHeap(capacity), key: func(s int32) plankit.Key {
			return plankit.Key{Major: tb.last[s]}
		}}
	}
	return tb
}

// hold sets bit (a mask with one bit set) in slot s's mask, taking s out
// of the victim candidates. A slot already held only gains the bit; the
// rest is out of line, which keeps hold small enough to inline into Hit.
func (tb *table) hold(s int32, bit uint64) {
	if m := &tb.HoldMask[s]; *m > 1 {
		*m |= bit
		return
	}
	tb.holdUnheld(s, bit)
}

// holdUnheld is hold for a slot whose mask is 0 (a victim candidate) or 1
// (expiring).
func (tb *table) holdUnheld(s int32, bit uint64) {
	m := tb.HoldMask[s]
	if m == 0 {
		tb.victims.Remove(s)
	} else {
		tb.expiring--
	}
	m |= bit
	tb.HoldMask[s] = m
	if m == 1 { // past_window 0: the current batch's bit is bit 0
		tb.expiring++
	}
}

// advance is Algorithm 1's Step B: every mask moves one batch into the
// past; a slot whose mask reaches 0 becomes a victim candidate, one whose
// mask reaches 1 will be one after the next Step B.
func (tb *table) advance() {
	var expiring int64
	masks := tb.HoldMask[:tb.HitMap.Filled()]
	for s, m := range masks {
		if m == 0 {
			continue
		}
		m >>= 1
		masks[s] = m
		if m <= 1 {
			if m == 0 {
				tb.victims.Add(int32(s))
			} else {
				expiring++
			}
		}
	}
	tb.expiring = expiring
}

func (tb *table) Resident() *plankit.Slots { return &tb.HitMap }

// Hit is Step C for a slot the batch looks up: it is held under the
// current batch's bit and its lookup recorded. The clock advances once
// per lookup here rather than in a plankit.Ticker: every lookup of a
// batch that plans reaches Hit once (a miss through Insert), and no
// victim's key reads the clock, so the keys are the same and a call per
// lookup is saved.
func (tb *table) Hit(s int32) {
	tb.hold(s, tb.current)
	*tb.clock++
	tb.last[s] = *tb.clock
	tb.count[s]++
}

// Victim picks among the un-held slots.
func (tb *table) Victim() (int32, bool) {
	s, ok := tb.victims.Pick()
	if !ok {
		tb.starved = true
	}
	return s, ok
}

// Insert starts the count of slot s's new row and holds it.
func (tb *table) Insert(s int32) {
	tb.count[s] = 0
	tb.Hit(s)
}

// Found is the slot of each of the batch's lookups, as the capacity check
// found them.
func (tb *table) Found() []int32 { return tb.found }

func (tb *table) Release() {}

type policy struct {
	plankit.Guard
	tables       []*table // nil until Configure
	past, future int
	clock        uint64
	checks       uint64
}

// New returns a ScratchPipe policy; Configure gives it its capacity and
// windows.
func New() cache.Cache { return &policy{} }

func (p *policy) Info(context.Context) (plugin.Info, error) {
	return plankit.Info(Name, Version,
		"ScratchPipe's scratchpad controller: Hit-Map updated at plan time, Hold mask over the past and future windows (Algorithm 1), victims among un-held slots by LRU, LFU or random; never bypasses",
		fields()), nil
}

// Needs declares the Hold mask: the policy holds its windows and never
// bypasses, so Storage must hold their worst case. Its own past_window and
// future_window options, where wider than the host's windows, are the
// windows that worst case spans; where narrower, it does not hold the
// host's windows.
func (p *policy) Needs(_ context.Context, setup plugin.Setup) (cache.Needs, error) {
	cfg := defaultConfig()
	if err := plankit.Decode(setup, &cfg); err != nil {
		return cache.Needs{}, err
	}
	past, future := cfg.Windows()
	needs := cache.Needs{HoldsWindows: past >= cfg.Past && future >= cfg.Future, NeverBypasses: true}
	if cfg.PastWindow != nil && past > cfg.Past {
		needs.Past = past
	}
	if cfg.FutureWindow != nil && future > cfg.Future {
		needs.Future = future
	}
	return needs, nil
}

func (p *policy) Configure(_ context.Context, setup plugin.Setup) error {
	cfg := defaultConfig()
	if err := plankit.Decode(setup, &cfg); err != nil {
		return err
	}
	past, future := cfg.Windows()
	tables, err := plankit.PerTable(cfg.Capacity, setup.Tables, func(t int, c int32) *table {
		return newTable(c, cfg.Victim, rand.New(rand.NewPCG(setup.Seed, uint64(t))), past, &p.clock)
	})
	if err != nil {
		return err
	}
	p.Guard.Configure(setup.Tables, func() {
		p.tables = tables
		p.past, p.future = past, future
		p.clock, p.checks = 0, 0
	})
	return nil
}

func (p *policy) Plan(_ context.Context, req *cache.PlanRequest) (*cache.PlanResult, error) {
	return p.Guard.Plan(Name, req, func(b *cache.Batch) (*cache.PlanResult, error) {
		return p.plan(req, b)
	})
}

// plan plans the checked batch b; the Guard holds the lock.
func (p *policy) plan(req *cache.PlanRequest, b *cache.Batch) (*cache.PlanResult, error) {
	future, err := p.Guard.Future(req)
	if err != nil {
		return nil, fmt.Errorf("scratchpipe: %w", err)
	}
	future = future[:min(len(future), p.future)]
	// Step A: the batch enters [Plan]. First make sure every table can
	// place it, so that a refusal changes nothing.
	for t := range p.tables {
		if err := p.check(req.Seq, t, b, future); err != nil {
			return nil, err
		}
	}
	for t, tb := range p.tables {
		lo, hi := b.Table(t)
		// Step B.
		tb.advance()
		// Hold the cached rows of the future window (as check found
		// them), each under its batch's bit, before any miss of this
		// batch picks a victim.
		n := int(hi - lo)
		for k := range len(tb.ahead) / max(n, 1) {
			bit := uint64(1) << (p.past + 1 + k)
			for _, s := range tb.ahead[k*n : (k+1)*n] {
				if s >= 0 {
					tb.hold(s, bit)
				}
			}
		}
	}
	// Step C: the batch's hits, then its misses in request order; the
	// Hit-Map gets a missed row now, Storage at this batch's insert.
	res := plankit.TwoPass(b, p.tables)
	for _, tb := range p.tables {
		tb.found = tb.found[:0] // for this batch only (plankit.Finder)
	}
	for t, tb := range p.tables {
		if tb.starved { // check said it fits; a bug, not a request to refuse
			tb.starved = false
			return nil, fmt.Errorf("scratchpipe: batch %d table %d: no un-held slot after the capacity check passed", req.Seq, t)
		}
	}
	return res, nil
}

// check reports, without changing the policy's state, whether table t can
// place every row batch b misses in a slot that is free or un-held once
// Step B has run and the future window and b's hits are held.
func (p *policy) check(seq uint64, t int, b *cache.Batch, future [][]int64) error {
	tb := p.tables[t]
	capacity := int64(tb.HitMap.Cap())
	// Slots whose mask is 0 (the victim candidates) or 1 (expiring) are
	// un-held after the shift.
	evictable := int64(tb.victims.Len()) + tb.expiring
	filled := tb.HitMap.Filled()
	p.checks++
	mark := p.checks
	// The check of batch seq-1 looked up this batch and all but the last
	// of its future batches. A row it found is still in that slot (batch
	// seq-1 held it under its batch's bit) unless the host sends other
	// IDs; a row it did not find may have been inserted since.
	var last []int32
	if tb.aheadSeq == seq {
		last = tb.ahead
	}
	lo, hi := b.Table(t)
	n := int(hi - lo)
	tb.ahead, tb.spare = grow(tb.spare, len(future)*n), tb.ahead
	tb.aheadSeq = seq + 1
	for k, ids := range future {
		tb.HitMap.LookupInto(ids[lo:hi], window(last, k+1, n), tb.ahead[k*n:(k+1)*n])
	}
	tb.found = grow(tb.found, n)
	tb.HitMap.LookupInto(b.IDs[lo:hi], window(last, 0, n), tb.found)
	// A slot un-held after the shift (mask 0 or 1) that the window or
	// the batch uses is not evictable after all; count each once.
	for _, found := range [2][]int32{tb.ahead, tb.found} {
		for _, s := range found {
			if s >= 0 && tb.HoldMask[s] <= 1 && tb.checked[s] != mark {
				tb.checked[s] = mark
				evictable--
			}
		}
	}
	tb.missing.Clear()
	for i, s := range tb.found {
		if s < 0 {
			tb.missing.Put(b.IDs[lo+int64(i)], 0)
		}
	}
	needed := int64(tb.missing.Len())
	free := capacity - int64(filled)
	if needed <= free+evictable {
		return nil
	}
	inUse := int64(filled) - evictable
	return fmt.Errorf("%w: scratchpipe: batch %d, table %d: %d rows to place but only %d free or un-held slots of %d (%d are held by the past %d batches, this batch and the next %d); the scratchpad needs capacity ≥ %d rows for this table",
		plugin.ErrInvalidRequest, seq, t, needed, free+evictable, capacity, inUse, p.past, len(future), inUse+needed)
}

// grow returns buf resized to n entries, reallocated only when too small.
func grow(buf []int32, n int) []int32 {
	if cap(buf) < n {
		return make([]int32, n)
	}
	return buf[:n]
}

// window is the part of last (a check's slots, n per batch) for batch k
// of that check's windows, cut where last ends.
func window(last []int32, k, n int) []int32 {
	return last[min(k*n, len(last)):min((k+1)*n, len(last))]
}
