package heca

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/flowrun/flowrun/sdk/cache/plankit"
)

// snapshotTag names the format of a HECA snapshot: the plans answered,
// then per table its hot part (row, slot pairs, and the plan that first
// filled each hot slot), the Cache Hash Table, the plan protecting each
// entry, and its counts (JSON, so that a count added later round-trips).
// where is not saved: it is the CHT's inverse.
const snapshotTag = "heca/1"

// Snapshot implements cache.Snapshotter.
func (p *Policy) Snapshot(context.Context) ([]byte, error) {
	var out []byte
	err := p.Guard.Locked(func() error {
		w := plankit.NewSnapshotWriter(snapshotTag)
		w.Uint64(p.plans)
		w.Uint64(uint64(len(p.tables)))
		for _, tb := range p.tables {
			rows := make([]int64, 0, len(tb.hot))
			for row := range tb.hot {
				rows = append(rows, row)
			}
			slices.Sort(rows)
			hot := make([]int64, 0, 2*len(rows))
			for _, row := range rows {
				hot = append(hot, row, int64(tb.hot[row]))
			}
			w.Int64s(hot)
			w.Uint64s(tb.hotFilled)
			w.Int64s(tb.CHT)
			w.Uint64s(tb.held)
			counts, err := json.Marshal(tb.counts)
			if err != nil {
				return err
			}
			w.Int64s(bytesAsInt64s(counts))
		}
		out = w.Bytes()
		return nil
	})
	return out, err
}

// Restore implements cache.Snapshotter; a bad snapshot changes nothing.
func (p *Policy) Restore(_ context.Context, snapshot []byte) error {
	return p.Guard.Locked(func() error {
		r, err := plankit.NewSnapshotReader(snapshot, snapshotTag)
		if err != nil {
			return err
		}
		plans := r.Uint64("plans")
		if n := r.Uint64("tables"); n != uint64(len(p.tables)) {
			return fmt.Errorf("heca snapshot: %d tables, the policy has %d", n, len(p.tables))
		}
		fresh := make([]*table, len(p.tables))
		for t, old := range p.tables {
			what := fmt.Sprintf("table %d", t)
			hot := r.Int64sAny(what + " hot part")
			if len(hot) != 2*len(old.hotFilled) {
				return fmt.Errorf("heca snapshot: %s: %d hot rows, the policy has %d", what, len(hot)/2, len(old.hotFilled))
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
			if err := json.Unmarshal(int64sAsBytes(r.Int64sAny(what+" counts")), &tb.counts); err != nil {
				return fmt.Errorf("heca snapshot: %s counts: %w", what, err)
			}
			fresh[t] = tb
		}
		if err := r.Close(); err != nil {
			return err
		}
		p.tables, p.plans = fresh, plans
		p.mu.Lock()
		p.counts = p.counts[:0]
		for _, tb := range fresh {
			p.counts = append(p.counts, tb.counts)
		}
		p.mu.Unlock()
		return nil
	})
}

// bytesAsInt64s carries bytes in the kit's int64 arrays: its length, then
// the bytes, one per entry (the counts are a few hundred bytes).
func bytesAsInt64s(b []byte) []int64 {
	out := make([]int64, len(b))
	for i, c := range b {
		out[i] = int64(c)
	}
	return out
}

func int64sAsBytes(xs []int64) []byte {
	out := make([]byte, len(xs))
	for i, x := range xs {
		out[i] = byte(x)
	}
	return out
}
