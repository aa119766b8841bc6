package mpcache

import (
	"slices"

	"github.com/flowrun/flowrun/sdk/cache"
)

// empty marks a free way.
const empty = -1

// Action is what Algorithm 2 did with one row i of IU.
type Action uint8

const (
	// Hit: i was in IC[h(i)] when the loop reached it.
	Hit Action = iota
	// Fill: the set had a free way; i took it, nothing was evicted (the
	// prose of Sec. 3; Algorithm 2 as printed omits this case).
	Fill
	// Replace: the set was full and PV[i] > PV[j] (or α = 1 under LRU):
	// j was evicted and i took its way.
	Replace
	// Bypass: the set was full and PV[i] ≤ PV[j]: i stays in its host
	// table.
	Bypass
)

func (a Action) String() string {
	return [...]string{"hit", "fill", "replace", "bypass"}[a]
}

// Event is one step of Algorithm 2: row i, what happened, its way in IC
// (set·ways + way; -1 for a bypass) and the row evicted (replace; else
// -1).
type Event struct {
	Row    int64
	Action Action
	Way    int32
	Victim int64
}

// table is one embedding table's cache C: sets × ways FP32 rows. Way w
// of set s is Algorithm 2's IC entry s·ways + w; the set's rows live in
// its Storage slots [s·ways, (s+1)·ways), but a row keeps the slot it was
// filled into for as long as it stays in its set, whichever way IC has it
// in (ways are Algorithm 2's bookkeeping, slots where the bytes are).
type table struct {
	sets, ways int
	// ic is the tag array IC: the row in each way, or empty.
	ic []int64
	// wayOf maps each resident row to its way (an index into ic).
	wayOf map[int64]int32
	// phys is the row in each Storage slot, or empty; slotOf its inverse.
	phys   []int64
	slotOf map[int64]int32
	// pv is the priority PV: under LFU every updated row's count, under
	// LRU each resident row's latest clock.
	pv map[int64]uint64
	// last is the latest batch's steps, in IU order.
	last   []Event
	counts Counts
	// per-batch scratch, reused: IU, and the sets the batch changed (a
	// set and in order), and which of IU's rows were resident before it.
	iu         []int64
	seen       map[int64]struct{}
	touched    map[int]struct{}
	sortedSets []int
	before     map[int64]bool
}

func newTable(sets, ways int) *table {
	n := sets * ways
	tb := &table{sets: sets, ways: ways, ic: make([]int64, n), wayOf: make(map[int64]int32, n),
		phys: make([]int64, n), slotOf: make(map[int64]int32, n),
		pv: map[int64]uint64{}, seen: map[int64]struct{}{}, touched: map[int]struct{}{}, before: map[int64]bool{}}
	for s := range tb.ic {
		tb.ic[s], tb.phys[s] = empty, empty
	}
	return tb
}

// planner is what one batch's plan needs besides the table.
type planner struct {
	cfg   Config
	now   uint64  // the batch clock: plans answered, this one included
	tick  *uint64 // the update clock
	b     *cache.Batch
	res   *cache.PlanResult
	nVict int64 // victim triples written so far
}

// plan runs Algorithm 2 over table t's IU (its distinct rows, ascending),
// moves each changed set's Storage slots to the set's rows after the
// batch (settle), then answers every lookup from there: a row in its set
// before and after the batch is a hit in its slot, a row newly in its set
// a fill of the slot it was given, any other row a bypass (slot -1,
// trained in its host table).
func (tb *table) plan(p *planner, t int) {
	lo, hi := p.b.Table(t)
	ids := p.b.IDs[lo:hi]
	tb.distinct(ids)
	clear(tb.touched)
	tb.last = tb.last[:0]
	st := &p.res.Tables[t]
	for _, row := range tb.iu {
		ev := Event{Row: row, Action: Bypass, Way: -1, Victim: -1}
		if tb.sets > 0 {
			ev = tb.update(p, row)
		}
		tb.last = append(tb.last, ev)
		tb.counts.add(ev.Action)
		if ev.Action == Hit {
			st.DistinctHits++
		}
	}
	st.DistinctMisses = int64(len(tb.iu)) - st.DistinctHits
	before := tb.before
	clear(before)
	for _, row := range tb.iu {
		_, before[row] = tb.slotOf[row]
	}
	tb.settle(p, t, st)
	for k, row := range ids {
		slot, hit := int64(-1), byte(0)
		if s, ok := tb.slotOf[row]; ok {
			slot = int64(s)
			if before[row] {
				hit = 1
			}
		}
		p.b.Slots[lo+int64(k)], p.b.Hits[lo+int64(k)] = slot, hit
		st.Hits += int64(hit)
	}
	st.Misses = hi - lo - st.Hits
	tb.counts.Lookups += hi - lo
	tb.counts.Hits += st.Hits
	tb.counts.Victims += st.Evictions
}

// settle makes every set the batch changed hold, in its Storage slots,
// the rows IC has in it: a row no longer in the set is a victim (written
// back before the batch's fills), a row new to it takes the lowest free
// slot, a row that stayed keeps its slot. Sets go in ascending order,
// victims in slot order.
func (tb *table) settle(p *planner, t int, st *cache.TableStats) {
	sets := tb.sortedSets[:0]
	for s := range tb.touched {
		sets = append(sets, s)
	}
	slices.Sort(sets)
	tb.sortedSets = sets
	for _, set := range sets {
		base := int32(set * tb.ways)
		for s := base; s < base+int32(tb.ways); s++ {
			old := tb.phys[s]
			if _, stays := tb.wayOf[old]; old == empty || stays {
				continue
			}
			v := p.b.Victims[3*p.nVict : 3*p.nVict+3]
			v[0], v[1], v[2] = int64(t), old, int64(s)
			p.nVict++
			st.Evictions++
			delete(tb.slotOf, old)
			tb.phys[s] = empty
		}
		free := base
		for w := base; w < base+int32(tb.ways); w++ {
			row := tb.ic[w]
			if _, placed := tb.slotOf[row]; row == empty || placed {
				continue
			}
			for tb.phys[free] != empty {
				free++
			}
			tb.phys[free], tb.slotOf[row] = row, free
		}
	}
}

// distinct sets iu to the distinct rows of ids, ascending: Algorithm 2's
// IU, a set of row indices, in the order the GPU version sorts them.
func (tb *table) distinct(ids []int64) {
	clear(tb.seen)
	tb.iu = tb.iu[:0]
	for _, row := range ids {
		if _, ok := tb.seen[row]; !ok {
			tb.seen[row] = struct{}{}
			tb.iu = append(tb.iu, row)
		}
	}
	slices.Sort(tb.iu)
}

// update is Algorithm 2's loop body for row i: update PV[i], then, when
// i ∉ IC[h(i)], fill a free way, or compare with the set's lowest
// priority j (ties: the lowest way) and replace j or bypass. The
// full-precision update T[i] += U[i] is the train stage's, wherever the
// row is. Events name ways (IC indices), not Storage slots.
func (tb *table) update(p *planner, i int64) Event {
	lru := p.cfg.Replacement == LRU
	var pvI uint64
	switch {
	case !lru:
		tb.pv[i]++
		pvI = tb.pv[i]
	case p.cfg.LRUClock == ClockUpdate:
		*p.tick++
		pvI = *p.tick
	default:
		pvI = p.now
	}
	if w, ok := tb.wayOf[i]; ok {
		if lru {
			tb.pv[i] = pvI
		}
		return Event{Row: i, Action: Hit, Way: w, Victim: -1}
	}
	set := Hash(p.cfg.Hash, p.cfg.HashSeed, i, tb.sets)
	base := int32(set * tb.ways)
	for w := base; w < base+int32(tb.ways); w++ {
		if tb.ic[w] == empty {
			tb.place(set, w, i, lru, pvI)
			return Event{Row: i, Action: Fill, Way: w, Victim: -1}
		}
	}
	j := base
	for w := base + 1; w < base+int32(tb.ways); w++ {
		if tb.pv[tb.ic[w]] < tb.pv[tb.ic[j]] {
			j = w
		}
	}
	if !(lru && tb.ways == 1) && pvI <= tb.pv[tb.ic[j]] {
		return Event{Row: i, Action: Bypass, Way: -1, Victim: -1}
	}
	old := tb.ic[j]
	delete(tb.wayOf, old)
	if lru {
		delete(tb.pv, old) // LRU keeps PV only for cached rows
	}
	tb.place(set, j, i, lru, pvI)
	return Event{Row: i, Action: Replace, Way: j, Victim: old}
}

// place puts row i in way w of set.
func (tb *table) place(set int, w int32, i int64, lru bool, pvI uint64) {
	tb.touched[set] = struct{}{}
	tb.ic[w] = i
	tb.wayOf[i] = w
	if lru {
		tb.pv[i] = pvI
	}
}

// Counts are one table's outcomes since Configure.
type Counts struct {
	// Lookups and Hits count every lookup, duplicates included, by where
	// the row is after the batch (cache.TableStats.Hits).
	Lookups, Hits int64
	// Unique counts IU's rows; UniqueHits, Fills, Replacements and
	// Bypasses what Algorithm 2 did with them (the paper's hit rate is
	// UniqueHits/Unique).
	Unique, UniqueHits, Fills, Replacements, Bypasses int64
	// Victims are the rows written back to their host tables: in their
	// set before a batch and not after it.
	Victims int64
}

func (c *Counts) add(a Action) {
	c.Unique++
	switch a {
	case Hit:
		c.UniqueHits++
	case Fill:
		c.Fills++
	case Replace:
		c.Replacements++
	case Bypass:
		c.Bypasses++
	}
}
