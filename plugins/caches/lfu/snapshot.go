package lfu

import (
	"context"
	"fmt"

	"github.com/flowrun/flowrun/sdk/cache/plankit"
)

// snapshotTag names the format of an LFU snapshot: the clock, then per
// table its resident rows, each slot's count and latest lookup, and the
// heap of eviction candidates.
const snapshotTag = "lfu/1"

// Snapshot implements cache.Snapshotter (between batches: no slot is
// held by a batch).
func (p *policy) Snapshot(context.Context) ([]byte, error) {
	var out []byte
	err := p.Guard.Locked(func() error {
		w := plankit.NewSnapshotWriter(snapshotTag)
		w.Uint64(p.clock)
		w.Uint64(uint64(len(p.tables)))
		for _, tb := range p.tables {
			w.Slots(&tb.Slots)
			w.Uint64s(tb.count)
			w.Uint64s(tb.last)
			w.SlotHeap(tb.candidates)
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
		clock := r.Uint64("clock")
		if n := r.Uint64("tables"); n != uint64(len(p.tables)) {
			return fmt.Errorf("lfu snapshot: %d tables, the policy has %d", n, len(p.tables))
		}
		fresh := make([]*table, len(p.tables))
		for t, old := range p.tables {
			what := fmt.Sprintf("table %d", t)
			tb := newTable(old.Cap(), &p.clock)
			tb.Slots = r.Slots(&old.Slots, what)
			r.Uint64s(tb.count, what+" counts")
			r.Uint64s(tb.last, what+" last")
			tb.candidates = r.SlotHeap(old.Cap(), what+" candidates")
			fresh[t] = tb
		}
		if err := r.Close(); err != nil {
			return err
		}
		p.tables, p.clock = fresh, clock
		return nil
	})
}
