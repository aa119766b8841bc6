package plankit

import "github.com/flowrun/flowrun/sdk/cache"

// Slots is one table's resident rows: an index from row to slot (the
// Hit-Map) and its inverse. Slots [0, filled) hold rows; the rest were
// never used.
type Slots struct {
	slotOf RowIndex
	rowOf  []int64
	filled int32
	// seen is the batch (epoch) whose pass 1 last hit a slot: TwoPass
	// counts distinct rows by slot, with no set of rows of its own.
	seen  []uint32
	epoch uint32
}

// NewSlots returns capacity empty slots.
func NewSlots(capacity int32) Slots {
	return Slots{slotOf: NewRowIndex(int(capacity)), rowOf: make([]int64, capacity)}
}

// Lookup returns the slot holding row.
func (sl *Slots) Lookup(row int64) (int32, bool) {
	return sl.slotOf.Get(row)
}

// LookupFrom is Lookup for a row that an earlier lookup found in slot
// hint (-1: found nowhere): a row still there is found without the map.
func (sl *Slots) LookupFrom(row int64, hint int32) (int32, bool) {
	if 0 <= hint && hint < sl.filled && sl.rowOf[hint] == row {
		return hint, true
	}
	return sl.Lookup(row)
}

// LookupInto writes the slot of each of rows into out (-1: not
// resident), trying hints[i] first where there is one: one call for a
// whole table of a batch, so that the map's probe is inlined into the loop.
func (sl *Slots) LookupInto(rows []int64, hints, out []int32) {
	out = out[:len(rows)]
	hints = hints[:min(len(hints), len(rows))]
	for i, row := range rows {
		if i < len(hints) {
			if h := hints[i]; 0 <= h && h < sl.filled && sl.rowOf[h] == row {
				out[i] = h
				continue
			}
		}
		s, ok := sl.slotOf.Get(row)
		if !ok {
			s = -1
		}
		out[i] = s
	}
}

// next starts a batch's count of distinct hit slots.
func (sl *Slots) next() uint32 {
	if len(sl.seen) != len(sl.rowOf) {
		sl.seen, sl.epoch = make([]uint32, len(sl.rowOf)), 0
	}
	sl.epoch++
	if sl.epoch == 0 { // wrapped: no stale mark may equal a new epoch
		clear(sl.seen)
		sl.epoch = 1
	}
	return sl.epoch
}

// Cap is the number of slots.
func (sl *Slots) Cap() int32 { return int32(len(sl.rowOf)) }

// Filled is the number of slots that hold rows.
func (sl *Slots) Filled() int32 { return sl.filled }

// Resident returns sl, so that a Table embedding its Slots has Resident.
func (sl *Slots) Resident() *Slots { return sl }

// Table is one table's policy.
type Table interface {
	// Resident returns the table's slots.
	Resident() *Slots
	// Hit holds slot s, which has a row this batch looks up, for the rest
	// of the batch (pass 1, and pass 2 for a row inserted earlier in it).
	Hit(s int32)
	// Victim takes a filled slot the batch does not use out of the
	// policy's order; false when every slot holds a row of the batch.
	Victim() (int32, bool)
	// Insert holds slot s, which now holds a row of this batch.
	Insert(s int32)
	// Release ends the batch for this table.
	Release()
}

// Ticker is a Table that counts lookups (an LFU's clock, say).
type Ticker interface {
	// Tick is called once per lookup, as it is planned: before Hit for a
	// hit, before anything else for a miss.
	Tick()
}

// Finder is a Table that has already looked up the batch's rows, with no
// change to its Slots since (only TwoPass changes them). TwoPass's first pass
// then takes the slots it found instead of looking every row up again.
type Finder interface {
	// Found returns the slot of each of the table's lookups in the batch,
	// in request order, -1 where the row is not resident; nil when the
	// table has not looked them up.
	Found() []int32
}

// TwoPass plans batch b over tables, in table order, and returns the stats
// and victim count. It counts each table's distinct rows too (a row's
// lookups share its slot), except where a row bypassed the cache: then it
// leaves both counts 0 for Guard to count from the hit bytes.
func TwoPass[T Table](b *cache.Batch, tables []T) *cache.PlanResult {
	res := &cache.PlanResult{Tables: make([]cache.TableStats, len(tables))}
	for t, tb := range tables {
		lo, hi := b.Table(t)
		var found []int32
		if f, ok := any(tb).(Finder); ok {
			// Only an answer for every lookup of this batch's table is
			// taken; anything else is looked up again.
			if fs := f.Found(); len(fs) == int(hi-lo) {
				found = fs
			}
		}
		tk, _ := any(tb).(Ticker)
		hits(b, t, tb, tk, found, &res.Tables[t])
		misses(b, t, tb, tk, res)
		tb.Release()
	}
	return res
}

// hits is TwoPass's pass 1: the batch's hits in table t. Holding them
// first is what keeps a later miss of this batch from evicting a row an
// earlier position already hit.
func hits[T Table](b *cache.Batch, t int, tb T, tk Ticker, found []int32, st *cache.TableStats) {
	sl := tb.Resident()
	epoch := sl.next()
	lo, hi := b.Table(t)
	ids, slots, hit := b.IDs[lo:hi], b.Slots[lo:hi], b.Hits[lo:hi]
	for i, row := range ids {
		var s int32
		var ok bool
		if found != nil {
			s = found[i]
			ok = s >= 0
		} else {
			s, ok = sl.slotOf.Get(row)
		}
		if !ok {
			hit[i] = 0
			continue
		}
		if tk != nil {
			tk.Tick()
		}
		tb.Hit(s)
		slots[i] = int64(s)
		hit[i] = 1
		st.Hits++
		if sl.seen[s] != epoch {
			sl.seen[s] = epoch
			st.DistinctHits++
		}
	}
}

// misses is TwoPass's pass 2: the misses of table t, in request order.
func misses[T Table](b *cache.Batch, t int, tb T, tk Ticker, res *cache.PlanResult) {
	sl := tb.Resident()
	st := &res.Tables[t]
	bypassed := false
	lo, hi := b.Table(t)
	for i := lo; i < hi; i++ {
		if b.Hits[i] == 1 {
			continue
		}
		st.Misses++
		row := b.IDs[i]
		if tk != nil {
			tk.Tick()
		}
		if s, ok := sl.slotOf.Get(row); ok { // inserted earlier in this batch
			tb.Hit(s)
			b.Slots[i] = int64(s)
			continue
		}
		var s int32
		if sl.filled < int32(len(sl.rowOf)) {
			s = sl.filled
			sl.filled++
		} else if v, ok := tb.Victim(); ok {
			s = v
			old := sl.rowOf[s]
			sl.slotOf.Delete(old)
			w := b.Victims[3*res.Victims : 3*res.Victims+3]
			w[0], w[1], w[2] = int64(t), old, int64(s)
			res.Victims++
			st.Evictions++
		} else {
			// Every slot holds a row of this batch (or the table has
			// no slots): the row bypasses the cache.
			b.Slots[i] = -1
			bypassed = true
			continue
		}
		sl.rowOf[s] = row
		sl.slotOf.Put(row, s)
		tb.Insert(s)
		b.Slots[i] = int64(s)
		st.DistinctMisses++
	}
	if bypassed { // a bypassed row has no slot to count it by
		st.DistinctHits, st.DistinctMisses = 0, 0
	}
}
