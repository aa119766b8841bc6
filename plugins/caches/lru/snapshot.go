package lru

import (
	"context"
	"fmt"

	"github.com/flowrun/flowrun/sdk/cache/plankit"
)

// snapshotTag names the format of an LRU snapshot: the epoch, then per
// table its resident rows, recency links, last users, head and tail.
const snapshotTag = "lru/1"

// Snapshot implements cache.Snapshotter.
func (p *policy) Snapshot(context.Context) ([]byte, error) {
	var out []byte
	err := p.Guard.Locked(func() error {
		w := plankit.NewSnapshotWriter(snapshotTag)
		w.Uint64(p.epoch)
		w.Uint64(uint64(len(p.tables)))
		for _, tb := range p.tables {
			w.Slots(&tb.Slots)
			w.Int32s(tb.prev)
			w.Int32s(tb.next)
			w.Uint64s(tb.usedBy)
			w.Int32s([]int32{tb.head, tb.tail})
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
		epoch := r.Uint64("epoch")
		if n := r.Uint64("tables"); n != uint64(len(p.tables)) {
			return fmt.Errorf("lru snapshot: %d tables, the policy has %d", n, len(p.tables))
		}
		fresh := make([]*table, len(p.tables))
		for t, old := range p.tables {
			tb := newTable(old.Cap(), &p.epoch)
			what := fmt.Sprintf("table %d", t)
			tb.Slots = r.Slots(&old.Slots, what)
			r.Int32s(tb.prev, what+" prev")
			r.Int32s(tb.next, what+" next")
			r.Uint64s(tb.usedBy, what+" used by")
			ends := make([]int32, 2)
			r.Int32s(ends, what+" head and tail")
			tb.head, tb.tail = ends[0], ends[1]
			fresh[t] = tb
		}
		if err := r.Close(); err != nil {
			return err
		}
		p.tables, p.epoch = fresh, epoch
		return nil
	})
}
