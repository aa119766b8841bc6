package lru

import (
	"context"

	"github.com/flowrun/flowrun/sdk/cache/plankit"
)

// snapshotTag names the format of an LRU snapshot: the epoch, then per
// table its resident rows, recency links, last users, head and tail.
const snapshotTag = "lru/1"

// Snapshot implements cache.Snapshotter.
func (p *policy) Snapshot(context.Context) ([]byte, error) {
	return plankit.SnapshotTables(&p.Guard, snapshotTag, func(w *plankit.SnapshotWriter) { w.Uint64(p.epoch) },
		p.tables, func(w *plankit.SnapshotWriter, tb *table) {
			w.Slots(&tb.Slots)
			w.Int32s(tb.prev)
			w.Int32s(tb.next)
			w.Uint64s(tb.usedBy)
			w.Int32s([]int32{tb.head, tb.tail})
		})
}

// Restore implements cache.Snapshotter; a bad snapshot changes nothing.
func (p *policy) Restore(_ context.Context, snapshot []byte) error {
	var epoch uint64
	return plankit.RestoreTables(&p.Guard, snapshot, snapshotTag, func(r *plankit.SnapshotReader) { epoch = r.Uint64("epoch") },
		p.tables, func(r *plankit.SnapshotReader, _ int, old *table, what string) *table {
			tb := newTable(old.Cap(), &p.epoch)
			tb.Slots = r.Slots(&old.Slots, what)
			r.Int32s(tb.prev, what+" prev")
			r.Int32s(tb.next, what+" next")
			r.Uint64s(tb.usedBy, what+" used by")
			ends := make([]int32, 2)
			r.Int32s(ends, what+" head and tail")
			tb.head, tb.tail = ends[0], ends[1]
			return tb
		}, func(fresh []*table) { p.tables, p.epoch = fresh, epoch })
}
