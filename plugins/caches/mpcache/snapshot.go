package mpcache

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/flowrun/flowrun/sdk/cache/plankit"
)

// snapshotTag names the format of an mpcache snapshot: the batch and
// update clocks, then per table its geometry (sets, ways), the tag array
// IC, the row in each Storage slot, the priorities PV as (row, value)
// pairs in ascending row order, and its counts (JSON, so that a count
// added later round-trips). wayOf and slotOf are not saved: they are IC's
// and the slots' inverses. The latest plan's events are not state (the
// next plan replaces them) and restart empty.
const snapshotTag = "mpcache/1"

// Snapshot implements cache.Snapshotter (between batches).
func (p *Policy) Snapshot(context.Context) ([]byte, error) {
	var countsErr error
	out, err := plankit.SnapshotTables(&p.Guard, snapshotTag, func(w *plankit.SnapshotWriter) { w.Uint64(p.plans); w.Uint64(p.tick) },
		p.tables, func(w *plankit.SnapshotWriter, tb *table) {
			w.Uint64(uint64(tb.sets))
			w.Uint64(uint64(tb.ways))
			w.Int64s(tb.ic)
			w.Int64s(tb.phys)
			w.Int64s(plankit.Pairs(tb.pv, func(v uint64) int64 { return int64(v) }))
			counts, err := json.Marshal(tb.counts)
			countsErr = errors.Join(countsErr, err)
			w.Blob(counts)
		})
	return out, errors.Join(err, countsErr)
}

// Restore implements cache.Snapshotter; a bad snapshot changes nothing.
func (p *Policy) Restore(_ context.Context, snapshot []byte) error {
	var plans, tick uint64
	return plankit.RestoreTables(&p.Guard, snapshot, snapshotTag, func(r *plankit.SnapshotReader) { plans, tick = r.Uint64("plans"), r.Uint64("tick") },
		p.tables, func(r *plankit.SnapshotReader, _ int, old *table, what string) *table {
			return p.restoreTable(r, old, what)
		}, func(fresh []*table) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.tables, p.plans, p.tick = fresh, plans, tick
		})
}

// restoreTable reads one table into a fresh one of old's geometry and
// checks it: every row in IC sits in its own set, once, and each set's
// slots hold the same rows as its ways.
func (p *Policy) restoreTable(r *plankit.SnapshotReader, old *table, what string) *table {
	sets, ways := r.Uint64(what+" sets"), r.Uint64(what+" ways")
	if sets != uint64(old.sets) || ways != uint64(old.ways) {
		r.Fail("%s: %d sets × %d ways, the policy has %d × %d", what, sets, ways, old.sets, old.ways)
		return old
	}
	tb := newTable(old.sets, old.ways)
	r.Int64s(tb.ic, what+" tags")
	r.Int64s(tb.phys, what+" slots")
	pv := r.Int64sAny(what + " priorities")
	if err := json.Unmarshal(r.Blob(what+" counts"), &tb.counts); err != nil {
		r.Fail("%s counts: %v", what, err)
	}
	if len(pv)%2 != 0 {
		r.Fail("%s: an odd number of priority entries", what)
		return old
	}
	for i := 0; i < len(pv); i += 2 {
		tb.pv[pv[i]] = uint64(pv[i+1])
	}
	for w, row := range tb.ic {
		if row == empty {
			continue
		}
		if _, dup := tb.wayOf[row]; dup || row < 0 || Hash(p.cfg.Hash, p.cfg.HashSeed, row, tb.sets) != w/tb.ways {
			r.Fail("%s: row %d twice or outside its set", what, row)
			return old
		}
		tb.wayOf[row] = int32(w)
	}
	for s, row := range tb.phys {
		if row == empty {
			continue
		}
		if w, ok := tb.wayOf[row]; !ok || int(w)/tb.ways != s/tb.ways {
			r.Fail("%s: slot %d holds row %d, which is not in its set", what, s, row)
			return old
		}
		if _, dup := tb.slotOf[row]; dup {
			r.Fail("%s: row %d in two slots", what, row)
			return old
		}
		tb.slotOf[row] = int32(s)
	}
	if len(tb.slotOf) != len(tb.wayOf) {
		r.Fail("%s: %d rows in ways, %d in slots", what, len(tb.wayOf), len(tb.slotOf))
		return old
	}
	return tb
}
