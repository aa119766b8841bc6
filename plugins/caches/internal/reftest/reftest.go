// Package reftest is the slow, obviously correct model of one table's
// two-pass cache that the built-in policies' tests compare them with: a
// linear scan finds rows, a global clock stamps every lookup, and each
// policy's test supplies only which unused slot it would evict. It is for
// tests only.
package reftest

import "github.com/flowrun/flowrun/sdk/cache/cachetest"

// Model is one table's cache. RowOf and Last are slot-indexed; slots are
// filled in order.
type Model struct {
	Capacity int
	RowOf    []int64
	Last     []int // Clock at the slot's latest lookup
	Clock    int
	// Used is the slots the latest planned batch looked up.
	Used map[int]bool
}

// Hooks are a policy's choices.
type Hooks struct {
	// Better reports whether slot c is a better victim than slot s (s ≥ 0
	// and was eligible). Only slots the batch does not use are offered.
	Better func(c, s int) bool
	// Eligible, if set, further restricts the victims.
	Eligible func(c int) bool
	// Touch, if set, runs after every lookup of slot s.
	Touch func(s int)
	// Insert, if set, runs when slot s gets a new row, before its lookup;
	// fresh is whether the slot was never used.
	Insert func(s int, fresh bool)
	// Bypass, if set, runs for every row that bypasses; it returns false
	// to stop planning (a policy that must never bypass).
	Bypass func() bool
}

// Find is the slot holding row, or -1.
func (m *Model) Find(row int64) int {
	for s, x := range m.RowOf {
		if x == row {
			return s
		}
	}
	return -1
}

// Plan plans ids for table: hits first, then misses in request order, a
// repeated miss reusing its first slot, a free slot before a victim, and
// slot -1 when no victim is left. ok is false when Bypass stopped it.
func (m *Model) Plan(table int64, ids []int64, h Hooks) (slots []int64, hits []byte, victims []cachetest.Victim, ok bool) {
	slots, hits = make([]int64, len(ids)), make([]byte, len(ids))
	m.Used = map[int]bool{}
	touch := func(s int) {
		m.Clock++
		m.Last[s] = m.Clock
		m.Used[s] = true
		if h.Touch != nil {
			h.Touch(s)
		}
	}
	for i, id := range ids {
		if s := m.Find(id); s >= 0 {
			touch(s)
			slots[i], hits[i] = int64(s), 1
		}
	}
	for i, id := range ids {
		if hits[i] == 1 {
			continue
		}
		if s := m.Find(id); s >= 0 {
			touch(s)
			slots[i] = int64(s)
			continue
		}
		s := -1
		if len(m.RowOf) < m.Capacity {
			m.RowOf = append(m.RowOf, id)
			m.Last = append(m.Last, 0)
			s = len(m.RowOf) - 1
			if h.Insert != nil {
				h.Insert(s, true)
			}
		} else {
			for c := range m.RowOf {
				if m.Used[c] || (h.Eligible != nil && !h.Eligible(c)) {
					continue
				}
				if s < 0 || h.Better(c, s) {
					s = c
				}
			}
			if s < 0 {
				if h.Bypass != nil && !h.Bypass() {
					return nil, nil, nil, false
				}
				slots[i] = -1
				continue
			}
			victims = append(victims, cachetest.Victim{Table: table, Row: m.RowOf[s], Slot: int64(s)})
			m.RowOf[s] = id
			if h.Insert != nil {
				h.Insert(s, false)
			}
		}
		touch(s)
		slots[i] = int64(s)
	}
	return slots, hits, victims, true
}
