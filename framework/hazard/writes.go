package hazard

import "fmt"

// PlannedBatch is what the plan stage holds of a batch once the cache
// policy has answered, as the batch arrays lay it out: one slot and one
// hit flag per ID, and the victims as (table, row, slot) triples. Its
// Writes are the writes ScratchPipe's later stages make for the batch.
type PlannedBatch struct {
	// IndexStart[t] is where table t's IDs begin in IDs, Slots and Hits;
	// its last entry is where the last table's end (tables+1 entries, as
	// batch.Layout.IndexStart gives them).
	IndexStart []int64
	IDs, Slots []int64
	Hits       []byte
	// Victims holds NVictims (table, row, slot) triples.
	Victims  []int64
	NVictims int64
	// Trains is false for a held-out batch, which train scores without
	// updating a row: it declares no train writes.
	Trains bool
}

// Writes lists, per table, what the batch will write:
//
//   - insert fills the slot of every missed ID (hit 0, slot ≥ 0) with its
//     row: RAW-3 for a later batch's collect reading that slot;
//   - insert writes every victim's row back to its host table: RAW-4 for a
//     later batch's collect gathering that row;
//   - train (when Trains) updates the slot of every ID it looks up:
//     RAW-2 for a later batch's collect reading that slot out as a victim,
//     RAW-1 for a later batch's train reading it.
//
// Bypassed IDs (slot −1) write no slot. It checks the arrays' shapes and
// returns an error naming the first inconsistency.
func (p PlannedBatch) Writes() (Writes, error) {
	nt := len(p.IndexStart) - 1
	if nt < 0 {
		return nil, fmt.Errorf("planned batch: no IndexStart")
	}
	end := p.IndexStart[nt]
	if int64(len(p.IDs)) < end || int64(len(p.Slots)) < end || int64(len(p.Hits)) < end {
		return nil, fmt.Errorf("planned batch: %d IDs, but ids/slots/hits hold %d/%d/%d", end, len(p.IDs), len(p.Slots), len(p.Hits))
	}
	if p.NVictims < 0 || 3*p.NVictims > int64(len(p.Victims)) {
		return nil, fmt.Errorf("planned batch: %d victims do not fit an array of %d", p.NVictims, len(p.Victims))
	}
	// One backing array for every table's fills, their rows and the
	// victims' rows: Writes runs once per batch on ~40k IDs per table.
	fills := int64(0)
	for t := range nt {
		lo, hi := p.IndexStart[t], p.IndexStart[t+1]
		if lo < 0 || hi < lo || hi > end {
			return nil, fmt.Errorf("planned batch: table %d: IDs [%d, %d) outside [0, %d)", t, lo, hi, end)
		}
		for i := lo; i < hi; i++ {
			if p.Hits[i] == 0 && p.Slots[i] >= 0 {
				fills++
			}
		}
	}
	perTable := make([]int64, nt)
	for i := range p.NVictims {
		t := p.Victims[3*i]
		if t < 0 || t >= int64(nt) {
			return nil, fmt.Errorf("planned batch: victim %d: table %d of %d", i, t, nt)
		}
		perTable[t]++
	}
	buf := make([]int64, 0, 2*fills+p.NVictims)
	w := make(Writes, 0, 3*nt)
	for t := range nt {
		lo, hi := p.IndexStart[t], p.IndexStart[t+1]
		start := len(buf)
		for i := lo; i < hi; i++ {
			if p.Hits[i] == 0 && p.Slots[i] >= 0 {
				buf = append(buf, p.Slots[i])
			}
		}
		n := len(buf) - start
		for i := lo; i < hi; i++ {
			if p.Hits[i] == 0 && p.Slots[i] >= 0 {
				buf = append(buf, p.IDs[i])
			}
		}
		if n > 0 {
			w = append(w, WriteSet{Stage: string(Insert), Kind: Slot, Table: t, Index: buf[start : start+n : start+n], Rows: buf[start+n : start+2*n : start+2*n]})
		}
		if p.Trains && hi > lo {
			// The rows are left out: a hazard on a trained slot is found
			// by a read that names its row (collect's victim triples) or
			// by train itself, RAW-1, which has no row to add.
			w = append(w, WriteSet{Stage: string(Train), Kind: Slot, Table: t, Index: p.Slots[lo:hi]})
		}
	}
	// The victims' rows, grouped by table in one pass (counting sort):
	// table t's go to vrows[start[t]:start[t]+perTable[t]].
	vrows := buf[len(buf) : len(buf)+int(p.NVictims)]
	start, next := make([]int64, nt), make([]int64, nt)
	for t := 1; t < nt; t++ {
		start[t] = start[t-1] + perTable[t-1]
	}
	copy(next, start)
	for i := range p.NVictims {
		t := p.Victims[3*i]
		vrows[next[t]] = p.Victims[3*i+1]
		next[t]++
	}
	for t := range nt {
		if perTable[t] > 0 {
			w = append(w, WriteSet{Stage: string(Insert), Kind: HostRow, Table: t, Index: vrows[start[t]:next[t]:next[t]]})
		}
	}
	return w, nil
}
