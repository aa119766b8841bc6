package heca

import "github.com/flowrun/flowrun/sdk/cache"

// empty marks a free entry of the Cache Hash Table.
const empty = -1

// table is one embedding table's cache: slots [0, len(hotFilled)) are the
// hot part, the rest the dynamic part, whose entry i is slot
// len(hotFilled) + i.
type table struct {
	// hot maps each hot row to its slot (its rank in the profile).
	hot map[int64]int32
	// hotFilled is, per hot slot, the plan that first filled it (0: not
	// yet): "preloaded before training" happens on the row's first use.
	hotFilled []uint64
	// CHT is Algorithm 1's Cache Hash Table: the key (row) in each entry
	// of the dynamic part, or empty. Entries are never emptied again, so
	// every probe chain stays valid.
	CHT []int64
	// where is the entry of each resident key: an index equal to the
	// bounded probe from hash(key), which finds a resident key within
	// len(CHT) steps (the reference in heca_test.go probes literally).
	where map[int64]int
	// held is, per entry, the plan that protects it (its key is in the
	// current batch CB or the next batch NB).
	held   []uint64
	counts Counts
	// inFlight are, in a pipelined graph (the host's past window > 0),
	// the keys and the bypassed keys of the last past batches this table
	// planned, oldest first: batches still between plan and train, whose
	// entries are held like CB's and whose bypassed keys bypass again
	// (README, "Windows").
	inFlight []flight
	// seen is a batch's answer per distinct key, reused across batches.
	seen map[int64]answer
}

// flight is one planned batch's keys of a table and those it bypassed.
type flight struct {
	keys     []int64
	bypassed map[int64]bool
}

func newTable(slots int32, hot map[int64]int32) *table {
	n := int(slots) - len(hot)
	tb := &table{hot: hot, hotFilled: make([]uint64, len(hot)), CHT: make([]int64, n),
		where: make(map[int64]int, n), held: make([]uint64, n)}
	for i := range tb.CHT {
		tb.CHT[i] = empty
	}
	tb.counts.HotRows = int64(len(hot))
	return tb
}

// full reports whether every entry of the dynamic part holds a key.
func (tb *table) full() bool { return len(tb.where) == len(tb.CHT) }

// answer is one unique key's outcome in a batch.
type answer struct {
	slot int64
	hit  byte
}

// planner is what one batch's plan of one table needs besides the table.
type planner struct {
	now    uint64
	t      int64
	hash   func(key int64, size int) int
	res    *cache.PlanResult
	b      *cache.Batch
	victim int64 // triples written so far
}

// plan answers table t's lookups of the batch: unique keys in
// first-occurrence order (HECA's DSF order), each hot, a hit in the
// dynamic part, a fill of an empty entry, a replacement or a bypass;
// every duplicate gets its key's answer. next are the future batches'
// keys of this table (the first is Algorithm 1's NB), none when the host
// sent none; past is the host's past window (0 but in a pipelined graph).
func (tb *table) plan(p *planner, next [][]int64, past int) {
	lo, hi := p.b.Table(int(p.t))
	ids := p.b.IDs[lo:hi]
	tb.hold(p.now, ids)
	for _, keys := range next {
		tb.hold(p.now, keys)
	}
	for _, f := range tb.inFlight {
		tb.hold(p.now, f.keys)
	}
	st := &p.res.Tables[p.t]
	if tb.seen == nil {
		tb.seen = make(map[int64]answer, len(ids))
	}
	seen := tb.seen
	clear(seen)
	var bypassed map[int64]bool
	for i, key := range ids {
		a, ok := seen[key]
		if !ok {
			a = tb.lookupInFlight(p, key)
			seen[key] = a
			st.DistinctHits += int64(a.hit)
			st.DistinctMisses += int64(1 - a.hit)
			if a.slot < 0 {
				tb.counts.Bypasses++
				if past > 0 {
					if bypassed == nil {
						bypassed = map[int64]bool{}
					}
					bypassed[key] = true
				}
			}
		}
		if _, hot := tb.hot[key]; hot {
			st.HotLookups++
		}
		p.b.Slots[lo+int64(i)], p.b.Hits[lo+int64(i)] = a.slot, a.hit
		st.Hits += int64(a.hit)
	}
	st.Misses = hi - lo - st.Hits
	tb.counts.Lookups += hi - lo
	tb.counts.Hits += st.Hits
	tb.counts.Evictions += st.Evictions
	tb.counts.Unique += st.DistinctHits + st.DistinctMisses
	tb.counts.UniqueHits += st.DistinctHits
	tb.counts.HotLookups += st.HotLookups
	if past > 0 {
		if len(tb.inFlight) == past {
			tb.inFlight = tb.inFlight[1:]
		}
		tb.inFlight = append(tb.inFlight, flight{keys: append([]int64(nil), ids...), bypassed: bypassed})
	}
}

// lookupInFlight is lookup, but a key that a batch still in flight
// bypassed bypasses again: that batch trains it in the host table, and
// filling a slot from the host row now would read it before that update
// (RAW hazard 2's host-row twin).
func (tb *table) lookupInFlight(p *planner, key int64) answer {
	for _, f := range tb.inFlight {
		if f.bypassed[key] {
			return answer{-1, 0}
		}
	}
	return tb.lookup(p, key)
}

// hold protects the entries of keys's resident keys for plan now.
func (tb *table) hold(now uint64, keys []int64) {
	for _, key := range keys {
		if e, ok := tb.where[key]; ok {
			tb.held[e] = now
		}
	}
}

// lookup is Algorithm 1 for one key of the batch (hot rows first: they
// never enter the hash table).
func (tb *table) lookup(p *planner, key int64) answer {
	if s, ok := tb.hot[key]; ok {
		if tb.hotFilled[s] == 0 {
			tb.hotFilled[s] = p.now
			return answer{int64(s), 0}
		}
		return answer{int64(s), 1}
	}
	base := int64(len(tb.hotFilled))
	if len(tb.CHT) == 0 {
		return answer{-1, 0}
	}
	if e, ok := tb.where[key]; ok { // lines 3–7: found within the probe
		tb.held[e] = p.now
		return answer{base + int64(e), 1}
	}
	start := p.hash(key, len(tb.CHT))
	if !tb.full() { // lines 3–5 and 9: the probe stops at an empty entry
		e := start
		for tb.CHT[e] != empty {
			e = (e + 1) % len(tb.CHT)
		}
		tb.place(p.now, e, key)
		return answer{base + int64(e), 0}
	}
	// Lines 12–15: full and absent. The printed while loop would spin
	// forever here; the probe is bounded at len(CHT) steps, and the search
	// for key1 runs forward from hash(key), wrapping once.
	for k := range len(tb.CHT) {
		e := (start + k) % len(tb.CHT)
		if tb.held[e] == p.now { // key1 in CB or NB (hot rows never are here)
			continue
		}
		old := tb.CHT[e]
		delete(tb.where, old)
		tb.place(p.now, e, key)
		v := p.b.Victims[3*p.victim : 3*p.victim+3]
		v[0], v[1], v[2] = p.t, old, base+int64(e)
		p.victim++
		p.res.Tables[p.t].Evictions++
		return answer{base + int64(e), 0}
	}
	return answer{-1, 0} // every resident is protected: bypass
}

// place puts key in entry e for plan now; it is part of the batch, so
// held.
func (tb *table) place(now uint64, e int, key int64) {
	tb.CHT[e] = key
	tb.where[key] = e
	tb.held[e] = now
}

// Counts are one table's outcomes since Configure, per lookup and per
// unique key of a batch (HECA's hit rate after DSF).
type Counts struct {
	// Lookups and Hits count every lookup, duplicates included.
	Lookups, Hits int64
	// Unique and UniqueHits count each batch's distinct rows once.
	Unique, UniqueHits int64
	// HotLookups are the lookups of hot rows; HotRows is the hot part's
	// size.
	HotLookups, HotRows int64
	// Bypasses are the unique keys that got slot -1 (every resident
	// protected); Evictions the victims.
	Bypasses, Evictions int64
}
