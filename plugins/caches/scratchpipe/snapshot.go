package scratchpipe

import (
	"context"
	"fmt"

	"github.com/flowrun/flowrun/sdk/cache/plankit"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// snapshotTag names the format of a ScratchPipe snapshot: the clock and
// the capacity checks made, then per table its Hit-Map, Hold mask, the
// expiring count, each slot's latest lookup and count, and the heap of
// victim candidates. The capacity check's scratch (the last batch's
// future window) is left out: it only speeds the next check's lookups.
const snapshotTag = "scratchpipe/1"

// Snapshot implements cache.Snapshotter between batches. The random
// victim order draws from a generator whose state is not saved: with
// victim: random the policy takes no snapshot (plugin.ErrUnsupported),
// and a resumed run restarts it cold.
func (p *policy) Snapshot(context.Context) ([]byte, error) {
	var out []byte
	err := p.Guard.Locked(func() error {
		w := plankit.NewSnapshotWriter(snapshotTag)
		w.Uint64(p.clock)
		w.Uint64(p.checks)
		w.Uint64(uint64(len(p.tables)))
		for _, tb := range p.tables {
			kv, ok := tb.victims.(*keyedVictims)
			if !ok {
				return fmt.Errorf("scratchpipe: %w: the random victim order's generator is not saved", plugin.ErrUnsupported)
			}
			w.Slots(&tb.HitMap)
			w.Uint64s(tb.HoldMask)
			w.Uint64(uint64(tb.expiring))
			w.Uint64s(tb.last)
			w.Uint64s(tb.count)
			w.SlotHeap(kv.heap)
		}
		out = w.Bytes()
		return nil
	})
	return out, err
}

// saved is one table's state read from a snapshot, before it replaces
// the table's.
type saved struct {
	hitMap            plankit.Slots
	hold, last, count []uint64
	expiring          int64
	heap              *plankit.SlotHeap
}

// Restore implements cache.Snapshotter; a bad snapshot changes nothing.
func (p *policy) Restore(_ context.Context, snapshot []byte) error {
	return p.Guard.Locked(func() error {
		r, err := plankit.NewSnapshotReader(snapshot, snapshotTag)
		if err != nil {
			return err
		}
		clock, checks := r.Uint64("clock"), r.Uint64("checks")
		if n := r.Uint64("tables"); n != uint64(len(p.tables)) {
			return fmt.Errorf("scratchpipe snapshot: %d tables, the policy has %d", n, len(p.tables))
		}
		all := make([]saved, len(p.tables))
		for t, tb := range p.tables {
			if _, ok := tb.victims.(*keyedVictims); !ok {
				return fmt.Errorf("scratchpipe: %w: the random victim order's generator is not saved", plugin.ErrUnsupported)
			}
			what, c := fmt.Sprintf("table %d", t), tb.HitMap.Cap()
			s := saved{hold: make([]uint64, c), last: make([]uint64, c), count: make([]uint64, c)}
			s.hitMap = r.Slots(&tb.HitMap, what)
			r.Uint64s(s.hold, what+" Hold mask")
			s.expiring = int64(r.Uint64(what + " expiring"))
			r.Uint64s(s.last, what+" last")
			r.Uint64s(s.count, what+" count")
			s.heap = r.SlotHeap(c, what+" victims")
			all[t] = s
		}
		if err := r.Close(); err != nil {
			return err
		}
		for t, tb := range p.tables {
			s := all[t]
			tb.HitMap, tb.HoldMask, tb.last, tb.count, tb.expiring = s.hitMap, s.hold, s.last, s.count, s.expiring
			tb.victims.(*keyedVictims).heap = s.heap
			clear(tb.checked)
			tb.ahead, tb.aheadSeq, tb.found, tb.starved = tb.ahead[:0], 0, tb.found[:0], false
		}
		p.clock, p.checks = clock, checks
		return nil
	})
}
