package static

import (
	"context"

	"github.com/flowrun/flowrun/sdk/cache/plankit"
)

// snapshotTag names the format of a static snapshot: the plans answered,
// whether the top-N is fixed, then per table its Hit-Map (row, slot
// pairs), the plan that first filled each slot, and the warm-up's counts
// (row, count pairs) while it still counts.
const snapshotTag = "static/1"

// Snapshot implements cache.Snapshotter.
func (p *policy) Snapshot(context.Context) ([]byte, error) {
	return plankit.SnapshotTables(&p.Guard, snapshotTag, func(w *plankit.SnapshotWriter) { w.Uint64(p.plans); w.Uint64(boolU(p.profiled)) },
		p.tables, func(w *plankit.SnapshotWriter, tb *table) {
			w.Uint64(boolU(tb.HitMap != nil))
			w.Int64s(plankit.Pairs(tb.HitMap, func(s int32) int64 { return int64(s) }))
			w.Uint64s(tb.filledAt)
			w.Uint64(boolU(tb.count != nil))
			w.Int64s(plankit.Pairs(tb.count, func(n uint64) int64 { return int64(n) }))
		})
}

// Restore implements cache.Snapshotter; a bad snapshot changes nothing.
func (p *policy) Restore(_ context.Context, snapshot []byte) error {
	var plans uint64
	var profiled bool
	return plankit.RestoreTables(&p.Guard, snapshot, snapshotTag, func(r *plankit.SnapshotReader) { plans, profiled = r.Uint64("plans"), r.Uint64("profiled") == 1 },
		p.tables, func(r *plankit.SnapshotReader, _ int, old *table, what string) *table {
			tb := &table{whole: old.whole, filledAt: make([]uint64, len(old.filledAt))}
			hasHit := r.Uint64(what+" has a Hit-Map") == 1
			hit := r.Int64sAny(what + " Hit-Map")
			if hasHit {
				tb.HitMap = make(map[int64]int32, len(hit)/2)
				for i := 0; i+1 < len(hit); i += 2 {
					tb.HitMap[hit[i]] = int32(hit[i+1])
				}
			}
			r.Uint64s(tb.filledAt, what+" filled at")
			hasCount := r.Uint64(what+" counts") == 1
			count := r.Int64sAny(what + " counts")
			if hasCount {
				tb.count = make(map[int64]uint64, len(count)/2)
				for i := 0; i+1 < len(count); i += 2 {
					tb.count[count[i]] = uint64(count[i+1])
				}
			}
			return tb
		}, func(fresh []*table) { p.tables, p.plans, p.profiled = fresh, plans, profiled })
}

func boolU(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
