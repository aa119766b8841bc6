package heca

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/flowrun/flowrun/sdk/cache/plankit"
)

// snapshotTag names the format of a HECA snapshot: the plans answered,
// then per table its hot part (row, slot pairs, and the plan that first
// filled each hot slot), the Cache Hash Table, the plan protecting each
// entry, and its counts (JSON, so that a count added later round-trips).
// where is not saved: it is the CHT's inverse.
const snapshotTag = "heca/2"

// Snapshot implements cache.Snapshotter.
func (p *Policy) Snapshot(context.Context) ([]byte, error) {
	var countsErr error
	out, err := plankit.SnapshotTables(&p.Guard, snapshotTag, func(w *plankit.SnapshotWriter) { w.Uint64(p.plans) },
		p.tables, func(w *plankit.SnapshotWriter, tb *table) {
			w.Int64s(plankit.Pairs(tb.hot, func(s int32) int64 { return int64(s) }))
			w.Uint64s(tb.hotFilled)
			w.Int64s(tb.CHT)
			w.Uint64s(tb.held)
			counts, err := json.Marshal(tb.counts)
			countsErr = errors.Join(countsErr, err)
			w.Blob(counts)
		})
	return out, errors.Join(err, countsErr)
}

// Restore implements cache.Snapshotter; a bad snapshot changes nothing.
func (p *Policy) Restore(_ context.Context, snapshot []byte) error {
	var plans uint64
	return plankit.RestoreTables(&p.Guard, snapshot, snapshotTag, func(r *plankit.SnapshotReader) { plans = r.Uint64("plans") },
		p.tables, func(r *plankit.SnapshotReader, _ int, old *table, what string) *table {
			hot := r.Int64sAny(what + " hot part")
			if len(hot) != 2*len(old.hotFilled) {
				r.Fail("%s: %d hot rows, the policy has %d", what, len(hot)/2, len(old.hotFilled))
				return old
			}
			hotMap := make(map[int64]int32, len(hot)/2)
			for i := 0; i+1 < len(hot); i += 2 {
				hotMap[hot[i]] = int32(hot[i+1])
			}
			tb := newTable(int32(len(old.hotFilled)+len(old.CHT)), hotMap)
			r.Uint64s(tb.hotFilled, what+" hot filled")
			r.Int64s(tb.CHT, what+" CHT")
			r.Uint64s(tb.held, what+" held")
			for i, key := range tb.CHT {
				if key != empty {
					tb.where[key] = i
				}
			}
			if err := json.Unmarshal(r.Blob(what+" counts"), &tb.counts); err != nil {
				r.Fail("%s counts: %v", what, err)
			}
			return tb
		}, func(fresh []*table) {
			p.tables, p.plans = fresh, plans
			p.mu.Lock()
			p.counts = p.counts[:0]
			for _, tb := range fresh {
				p.counts = append(p.counts, tb.counts)
			}
			p.mu.Unlock()
		})
}
