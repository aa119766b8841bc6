package lfu

import (
	"context"

	"github.com/flowrun/flowrun/sdk/cache/plankit"
)

// snapshotTag names the format of an LFU snapshot: the clock, then per
// table its resident rows, each slot's count and latest lookup, and the
// heap of eviction candidates.
const snapshotTag = "lfu/1"

// Snapshot implements cache.Snapshotter (between batches: no slot is
// held by a batch).
func (p *policy) Snapshot(context.Context) ([]byte, error) {
	return plankit.SnapshotTables(&p.Guard, snapshotTag, func(w *plankit.SnapshotWriter) { w.Uint64(p.clock) },
		p.tables, func(w *plankit.SnapshotWriter, tb *table) {
			w.Slots(&tb.Slots)
			w.Uint64s(tb.count)
			w.Uint64s(tb.last)
			w.SlotHeap(tb.candidates)
		})
}

// Restore implements cache.Snapshotter; a bad snapshot changes nothing.
func (p *policy) Restore(_ context.Context, snapshot []byte) error {
	var clock uint64
	return plankit.RestoreTables(&p.Guard, snapshot, snapshotTag, func(r *plankit.SnapshotReader) { clock = r.Uint64("clock") },
		p.tables, func(r *plankit.SnapshotReader, _ int, old *table, what string) *table {
			tb := newTable(old.Cap(), &p.clock)
			tb.Slots = r.Slots(&old.Slots, what)
			r.Uint64s(tb.count, what+" counts")
			r.Uint64s(tb.last, what+" last")
			tb.candidates = r.SlotHeap(old.Cap(), what+" candidates")
			return tb
		}, func(fresh []*table) { p.tables, p.clock = fresh, clock })
}
