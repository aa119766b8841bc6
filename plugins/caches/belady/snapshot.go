package belady

import (
	"context"

	"github.com/flowrun/flowrun/sdk/cache/plankit"
)

// snapshotTag names the format of a Belady snapshot: the clock and plans,
// then per table its resident rows, each slot's latest lookup, the heap
// of slots with no next use, and the per-plan stamps.
const snapshotTag = "belady/1"

// Snapshot implements cache.Snapshotter (between batches: the window's
// per-batch lists are empty).
func (p *policy) Snapshot(context.Context) ([]byte, error) {
	return plankit.SnapshotTables(&p.Guard, snapshotTag, func(w *plankit.SnapshotWriter) { w.Uint64(p.clock); w.Uint64(p.plans) },
		p.tables, func(w *plankit.SnapshotWriter, tb *table) {
			w.Slots(&tb.Slots)
			w.Uint64s(tb.last)
			w.SlotHeap(tb.never)
			w.Uint64s(tb.stamp)
			next := make([]int64, len(tb.nextUse))
			for i, v := range tb.nextUse {
				next[i] = int64(v)
			}
			w.Int64s(next)
		})
}

// Restore implements cache.Snapshotter; a bad snapshot changes nothing.
func (p *policy) Restore(_ context.Context, snapshot []byte) error {
	var clock, plans uint64
	return plankit.RestoreTables(&p.Guard, snapshot, snapshotTag, func(r *plankit.SnapshotReader) { clock, plans = r.Uint64("clock"), r.Uint64("plans") },
		p.tables, func(r *plankit.SnapshotReader, _ int, old *table, what string) *table {
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
			return tb
		}, func(fresh []*table) { p.tables, p.clock, p.plans = fresh, clock, plans })
}
