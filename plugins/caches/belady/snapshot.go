package belady

import (
	"context"
	"fmt"

	"github.com/flowrun/flowrun/sdk/cache/plankit"
)

// snapshotTag names the format of a Belady snapshot: the clock and plans,
// then per table its resident rows, each slot's latest lookup, the heap
// of slots with no next use, and the per-plan stamps.
const snapshotTag = "belady/1"

// Snapshot implements cache.Snapshotter (between batches: the window's
// per-batch lists are empty).
func (p *policy) Snapshot(context.Context) ([]byte, error) {
	var out []byte
	err := p.Guard.Locked(func() error {
		w := plankit.NewSnapshotWriter(snapshotTag)
		w.Uint64(p.clock)
		w.Uint64(p.plans)
		w.Uint64(uint64(len(p.tables)))
		for _, tb := range p.tables {
			w.Slots(&tb.Slots)
			w.Uint64s(tb.last)
			w.SlotHeap(tb.never)
			w.Uint64s(tb.stamp)
			next := make([]int64, len(tb.nextUse))
			for i, v := range tb.nextUse {
				next[i] = int64(v)
			}
			w.Int64s(next)
		}
		out = w.Bytes()
		return nil
	})
	return out, err
}

// Restore implements cache.Snapshotter; a bad snapshot changes nothing.
func (p *policy) Restore(_ context.Context, snapshot []byte) error {
	return p.Guard.Locked(func() error {
		r, err := plankit.NewSnapshotReader(snapshot, snapshotTag)
		if err != nil {
			return err
		}
		clock, plans := r.Uint64("clock"), r.Uint64("plans")
		if n := r.Uint64("tables"); n != uint64(len(p.tables)) {
			return fmt.Errorf("belady snapshot: %d tables, the policy has %d", n, len(p.tables))
		}
		fresh := make([]*table, len(p.tables))
		for t, old := range p.tables {
			what := fmt.Sprintf("table %d", t)
			tb := newTable(old.Cap(), &p.plans, &p.clock)
			tb.Slots = r.Slots(&old.Slots, what)
			r.Uint64s(tb.last, what+" last")
			tb.never = r.SlotHeap(old.Cap(), what+" never")
			r.Uint64s(tb.stamp, what+" stamps")
			next := make([]int64, len(tb.nextUse))
			r.Int64s(next, what+" next uses")
			for i, v := range next {
				tb.nextUse[i] = int(v)
			}
			fresh[t] = tb
		}
		if err := r.Close(); err != nil {
			return err
		}
		p.tables, p.clock, p.plans = fresh, clock, plans
		return nil
	})
}
