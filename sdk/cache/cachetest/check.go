package cachetest

import (
	"fmt"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// maxErrors caps the errors one check reports, so a broken policy does not
// flood the test log.
const maxErrors = 10

// resident is the suite's model of what each table's cache holds, built
// only from the policy's own answers: a row is resident at a slot from the
// batch that gave it that slot until a batch reports it as a victim. Rows a
// policy preloads (a static cache) are unknown to it and never checked.
type resident struct {
	rowAt  []map[int64]int64 // per table: slot -> row
	slotOf []map[int64]int64 // per table: row -> slot
}

func newResident(nTables int) *resident {
	r := &resident{}
	for range nTables {
		r.rowAt = append(r.rowAt, map[int64]int64{})
		r.slotOf = append(r.slotOf, map[int64]int64{})
	}
	return r
}

// violations collects a check's errors, up to maxErrors.
type violations []error

// add records a violation and reports whether there is room for more.
func (v *violations) add(format string, args ...any) bool {
	if len(*v) < maxErrors {
		*v = append(*v, fmt.Errorf(format, args...))
	}
	return len(*v) < maxErrors
}

// checkPlan checks one batch's outcome against the contract and, when model
// is not nil, against the residency model, which it then advances. It
// returns every violation found (up to maxErrors).
func checkPlan(tabs []plugin.Table, capacity int64, ids [][]int64, o outcome, model *resident) []error {
	if err := checkResult(tabs, ids, o.result); err != nil {
		return []error{err}
	}
	var errs violations
	for t, tab := range ids {
		checkLookups(&errs, t, tab, capacity, o)
	}
	checkVictims(&errs, tabs, capacity, o)
	if model == nil || len(errs) > 0 {
		return errs
	}
	model.advance(&errs, ids, o)
	return errs
}

// checkResult checks what the rest of the checks rely on: a result with
// stats for every table and a victim count the request has room for.
func checkResult(tabs []plugin.Table, ids [][]int64, res *cache.PlanResult) error {
	if res == nil {
		return fmt.Errorf("Plan returned a nil result and no error")
	}
	if len(res.Tables) != len(tabs) {
		return fmt.Errorf("result has stats for %d tables, want %d", len(res.Tables), len(tabs))
	}
	var n int64
	for _, tab := range ids {
		n += int64(len(tab))
	}
	if res.Victims < 0 || res.Victims > n {
		return fmt.Errorf("result reports %d victims; the request has room for 0..%d", res.Victims, n)
	}
	return nil
}

// checkLookups checks table t's lookups: ranges, one answer per row, one
// row per slot, and the stats against the hit bytes.
func checkLookups(errs *violations, t int, tab []int64, capacity int64, o outcome) {
	type answer struct {
		slot int64
		hit  byte
	}
	var hits, misses int64
	byRow := map[int64]answer{}
	rowBySlot := map[int64]int64{}
	for i, row := range tab {
		slot, hit := o.slots[t][i], o.hits[t][i]
		if slot < -1 || slot >= capacity {
			errs.add("table %d lookup %d (row %d): slot %d outside [-1, %d)", t, i, row, slot, capacity)
		}
		switch hit {
		case 0:
			misses++
		case 1:
			hits++
		default:
			errs.add("table %d lookup %d (row %d): hit byte %d, want 0 or 1", t, i, row, hit)
		}
		if prev, ok := byRow[row]; ok {
			if prev != (answer{slot, hit}) {
				errs.add("table %d row %d: repeated lookups got (slot %d, hit %d) and (slot %d, hit %d); one row has one answer per batch", t, row, prev.slot, prev.hit, slot, hit)
			}
			continue
		}
		byRow[row] = answer{slot, hit}
		if slot >= 0 {
			if other, ok := rowBySlot[slot]; ok {
				errs.add("table %d slot %d: given to rows %d and %d in one batch", t, slot, other, row)
			}
			rowBySlot[slot] = row
		}
	}
	st := o.result.Tables[t]
	if st.Hits+st.Misses != int64(len(tab)) {
		errs.add("table %d: hits %d + misses %d = %d, want %d lookups", t, st.Hits, st.Misses, st.Hits+st.Misses, len(tab))
	}
	if st.Hits != hits || st.Misses != misses {
		errs.add("table %d: stats say %d hits / %d misses, hit bytes say %d / %d", t, st.Hits, st.Misses, hits, misses)
	}
	if st.Evictions < 0 {
		errs.add("table %d: %d evictions", t, st.Evictions)
	}
	var uniqueHits int64
	for _, a := range byRow {
		uniqueHits += int64(a.hit)
	}
	checkDistinct(errs, t, st, int64(len(tab)), int64(len(byRow)), uniqueHits)
}

// checkDistinct checks the per-distinct-row counts of a policy that
// reports them: DistinctHits + DistinctMisses is the table's distinct rows
// of the batch (a policy may define a distinct row's hit its own way, so
// only the sum is checked against the answers, beside hits ≤ rows); and
// HotLookups, when reported, is at most the lookups.
func checkDistinct(errs *violations, t int, st cache.TableStats, lookups, unique, _ int64) {
	if n := st.DistinctHits + st.DistinctMisses; n != 0 && (n != unique || st.DistinctHits < 0 || st.DistinctMisses < 0) {
		errs.add("table %d: stats say %d distinct hits and %d misses, the answers have %d distinct rows", t, st.DistinctHits, st.DistinctMisses, unique)
	}
	if st.HotLookups < 0 || st.HotLookups > lookups {
		errs.add("table %d: %d hot lookups of %d lookups", t, st.HotLookups, lookups)
	}
}

// checkVictims checks the victim triples: in range, each slot once, and
// counted in the per-table stats.
func checkVictims(errs *violations, tabs []plugin.Table, capacity int64, o outcome) {
	res := o.result
	evictions := make([]int64, len(tabs))
	var sum int64
	for _, st := range res.Tables {
		sum += st.Evictions
	}
	if sum != res.Victims {
		errs.add("per-table evictions sum to %d, result reports %d victims", sum, res.Victims)
	}
	seenVictim := map[[2]int64]bool{}
	for i, v := range o.victims {
		t, row, slot := v[0], v[1], v[2]
		if t < 0 || t >= int64(len(tabs)) {
			errs.add("victim %d: table %d outside [0, %d)", i, t, len(tabs))
			continue
		}
		evictions[t]++
		if row < 0 || row >= tabs[t].Rows {
			errs.add("victim %d: table %d row %d outside [0, %d)", i, t, row, tabs[t].Rows)
		}
		if slot < 0 || slot >= capacity {
			errs.add("victim %d: table %d slot %d outside [0, %d)", i, t, slot, capacity)
		}
		if seenVictim[[2]int64{t, slot}] {
			errs.add("victim %d: table %d slot %d evicted twice in one batch", i, t, slot)
		}
		seenVictim[[2]int64{t, slot}] = true
	}
	for t := range tabs {
		if evictions[t] != res.Tables[t].Evictions {
			errs.add("table %d: %d victim triples, stats say %d evictions", t, evictions[t], res.Tables[t].Evictions)
		}
	}
}

// advance checks o against the residency model and applies it: victims
// must have been resident where the policy says, and a row the policy
// cached earlier and never evicted must still be there.
func (model *resident) advance(errs *violations, ids [][]int64, o outcome) {
	for i, v := range o.victims {
		t, row, slot := v[0], v[1], v[2]
		if known, ok := model.rowAt[t][slot]; ok && known != row {
			errs.add("victim %d: table %d slot %d holds row %d (given in an earlier batch), not row %d", i, t, slot, known, row)
		}
		if known, ok := model.slotOf[t][row]; ok && known != slot {
			errs.add("victim %d: table %d row %d lives in slot %d, not slot %d", i, t, row, known, slot)
		}
		if model.rowAt[t][slot] == row {
			delete(model.rowAt[t], slot)
		}
		if model.slotOf[t][row] == slot {
			delete(model.slotOf[t], row)
		}
	}
	for t, tab := range ids {
		done := map[int64]bool{}
		for i, row := range tab {
			if done[row] {
				continue
			}
			done[row] = true
			slot, hit := o.slots[t][i], o.hits[t][i]
			if known, ok := model.slotOf[t][row]; ok {
				if slot != known {
					errs.add("table %d row %d: cached in slot %d by an earlier batch and never evicted, now given slot %d", t, row, known, slot)
				} else if hit != 1 {
					errs.add("table %d row %d: cached in slot %d by an earlier batch and never evicted, now reported as a miss", t, row, known)
				}
			}
			if slot < 0 {
				continue
			}
			if other, ok := model.rowAt[t][slot]; ok && other != row {
				errs.add("table %d slot %d: given to row %d while row %d still holds it (no victim reported, so the host would lose row %d)", t, slot, row, other, other)
				delete(model.slotOf[t], other)
			}
			model.rowAt[t][slot] = row
			model.slotOf[t][row] = slot
		}
	}
}
