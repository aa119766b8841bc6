package mpcache_test

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/plugins/caches/internal/reftest"
	"github.com/flowrun/flowrun/plugins/caches/mpcache"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
)

// algorithm2 is the reference: the paper's Algorithm 2 as printed, on
// plain slices and maps, with the spec's decisions added (a free way is
// filled without eviction; IU is a batch's distinct rows, ascending; argmin
// ties take the lowest way; LRU's clock is the batch or the update).
type algorithm2 struct {
	sets, ways int
	lfu        bool
	clock      string
	hash       func(row int64) int
	ic         [][]int64 // per set, per way; -1 free
	pv         map[int64]uint64
	now, tick  uint64
}

func newAlgorithm2(sets, ways int, lfu bool, clock string, hash func(int64) int) *algorithm2 {
	r := &algorithm2{sets: sets, ways: ways, lfu: lfu, clock: clock, hash: hash, pv: map[int64]uint64{}}
	for range sets {
		r.ic = append(r.ic, slices.Repeat([]int64{-1}, ways))
	}
	return r
}

func (r *algorithm2) resident(row int64) bool {
	return slices.Contains(r.ic[r.hash(row)], row)
}

// batch runs Algorithm 2 over the distinct rows of ids and returns its
// events.
func (r *algorithm2) batch(ids []int64) []mpcache.Event {
	r.now++
	iu := slices.Compact(slices.Sorted(slices.Values(ids)))
	var out []mpcache.Event
	for _, i := range iu {
		// update PV[i] (LRU: timestamp, LFU: count++)
		var p uint64
		switch {
		case r.lfu:
			r.pv[i]++
			p = r.pv[i]
		case r.clock == mpcache.ClockUpdate:
			r.tick++
			p = r.tick
		default:
			p = r.now
		}
		s := r.hash(i)
		set := r.ic[s]
		if w := slices.Index(set, i); w >= 0 { // i ∈ IC[s]
			if !r.lfu {
				r.pv[i] = p
			}
			out = append(out, mpcache.Event{Row: i, Action: mpcache.Hit, Way: int32(s*r.ways + w), Victim: -1})
			continue
		}
		if w := slices.Index(set, -1); w >= 0 { // the set is not full
			set[w] = i
			if !r.lfu {
				r.pv[i] = p
			}
			out = append(out, mpcache.Event{Row: i, Action: mpcache.Fill, Way: int32(s*r.ways + w), Victim: -1})
			continue
		}
		j := 0 // argmin{PV[k] | k ∈ IC[s]}, the lowest way on ties
		for w := range set {
			if r.pv[set[w]] < r.pv[set[j]] {
				j = w
			}
		}
		if p <= r.pv[set[j]] && !(r.ways == 1 && !r.lfu) { // bypass
			out = append(out, mpcache.Event{Row: i, Action: mpcache.Bypass, Way: -1, Victim: -1})
			continue
		}
		old := set[j]
		set[j] = i
		if !r.lfu {
			delete(r.pv, old)
			r.pv[i] = p
		}
		out = append(out, mpcache.Event{Row: i, Action: mpcache.Replace, Way: int32(s*r.ways + j), Victim: old})
	}
	return out
}

func (r *algorithm2) tags() []int64 { return slices.Concat(r.ic...) }

// skewed draws batches of n lookups from rows with a power-law skew, so
// that sets overflow, rows come back and counts differ.
func skewed(rng *rand.Rand, batches, n int, rows int64) [][]int64 {
	out := make([][]int64, batches)
	for b := range out {
		for range n {
			u := rng.Float64()
			out[b] = append(out[b], int64(float64(rows)*u*u*u)%rows)
		}
	}
	return out
}

// The policy replays Algorithm 2 exactly: on skewed batches over one
// table, under LFU and both LRU clocks, direct-mapped to 32-way, both
// hashes and a paper-style fraction, every batch gives the reference's
// steps (hit, fill, replace with its victim, bypass) and tag array, and
// its plan follows from them: a row in its set before and after the batch
// hits, a row in its set only after is filled, any other row bypasses,
// and the victims are exactly the rows in their set before and not after.
func TestAlgorithm2Replay(t *testing.T) {
	const rows = 3000
	for _, c := range []struct {
		options string
		sets    int
		ways    int
		lfu     bool
		clock   string
		seed    uint64 // of mix; mod when absent
		mix     bool
	}{
		{`{"capacity":64}`, 2, 32, true, "", 0, false},
		{`{"capacity":64,"ways":1}`, 64, 1, true, "", 0, false},
		{`{"capacity":64,"ways":1,"replacement":"lru"}`, 64, 1, false, mpcache.ClockBatch, 0, false},
		{`{"capacity":64,"ways":4,"replacement":"lru","hash":"mix"}`, 16, 4, false, mpcache.ClockBatch, 0, true},
		{`{"capacity":64,"ways":8,"replacement":"lru","lru_clock":"update"}`, 8, 8, false, mpcache.ClockUpdate, 0, false},
		{`{"capacity":64,"ways":2,"hash":"mix","hash_seed":5}`, 32, 2, true, "", 5, true},
		// ⌊0.05·3000/8⌋ = 18 sets: 144 of the 200 slots the host gives.
		{`{"capacity":200,"ways":8,"fraction":0.05}`, 18, 8, true, "", 0, false},
	} {
		t.Run(c.options, func(t *testing.T) {
			hash := func(row int64) int { return mpcache.Hash(mpcache.HashMod, 0, row, c.sets) }
			if c.mix {
				hash = func(row int64) int { return mpcache.Hash(mpcache.HashMix, c.seed, row, c.sets) }
			}
			options := c.options
			ref := newAlgorithm2(c.sets, c.ways, c.lfu, c.clock, hash)
			p := reftest.Configured(t, mpcache.New(), 1, options, rows).(*mpcache.Policy)
			if s, w := p.Geometry(0); s != c.sets || w != c.ways {
				t.Fatalf("geometry %d×%d, want %d×%d", s, w, c.sets, c.ways)
			}
			batches := skewed(rand.New(rand.NewPCG(7, uint64(c.ways))), 60, 96, rows)
			var sum mpcache.Counts
			for i := range batches {
				before := map[int64]bool{}
				for _, id := range batches[i] {
					before[id] = ref.resident(id)
				}
				oldTags := ref.tags()
				want := ref.batch(batches[i])
				steps := reftest.PlanAll(t, p, 0, batches[i:i+1])
				s := steps[0]
				if s.Err != nil {
					t.Fatal(s.Err)
				}
				if got := p.Events(0); !reflect.DeepEqual(got, want) {
					t.Fatalf("batch %d: events\n%v\nwant\n%v", i, got, want)
				}
				if got := p.Tags(0); !reflect.DeepEqual(got, ref.tags()) {
					t.Fatalf("batch %d: tags %v, want %v", i, got, ref.tags())
				}
				checkPlan(t, i, batches[i], before, ref, oldTags, s.P.Slots(0), s.P.Hits(0), s.P.Victims(s.Res.Victims))
				for _, e := range want {
					if e.Action == mpcache.Hit {
						sum.UniqueHits++
					}
				}
				sum.Unique += int64(len(want))
				st := s.Res.Tables[0]
				if st.DistinctHits+st.DistinctMisses != int64(len(want)) {
					t.Fatalf("batch %d: distinct %d+%d, want %d rows", i, st.DistinctHits, st.DistinctMisses, len(want))
				}
			}
			got := p.Counts()[0]
			if got.Unique != sum.Unique || got.UniqueHits != sum.UniqueHits {
				t.Errorf("counts %+v, want unique %d hits %d", got, sum.Unique, sum.UniqueHits)
			}
			if got.Fills == 0 || got.UniqueHits == 0 || (got.Replacements == 0 && got.Bypasses == 0) {
				t.Errorf("counts %+v: the replay must fill, hit and decide on full sets", got)
			}
			t.Logf("%+v", got)
		})
	}
}

// checkPlan checks one batch's plan against the reference's residency
// before (before, oldTags) and after (ref) the batch.
func checkPlan(t *testing.T, i int, ids []int64, before map[int64]bool, ref *algorithm2, oldTags []int64, slots []int64, hits []byte, victims []cachetest.Victim) {
	t.Helper()
	for k, id := range ids {
		after := ref.resident(id)
		if (slots[k] >= 0) != after || (hits[k] == 1) != (before[id] && after) {
			t.Fatalf("batch %d row %d: slot %d hit %d; before %v after %v", i, id, slots[k], hits[k], before[id], after)
		}
		if after && int(slots[k])/ref.ways != ref.hash(id) {
			t.Fatalf("batch %d row %d: slot %d outside its set %d", i, id, slots[k], ref.hash(id))
		}
	}
	var want []int64
	for _, row := range oldTags {
		if row >= 0 && !ref.resident(row) {
			want = append(want, row)
		}
	}
	var got []int64
	for _, v := range victims {
		got = append(got, v.Row)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("batch %d: victims %v, want %v", i, got, want)
	}
}

// Bad options are refused with their key; Needs declares no window held
// and bypasses allowed, and each table's memory for Eq. 2 (one table of
// 1000 rows at dim 4: a cached row is 4 FP32 values and a tag, 20 bytes;
// LFU's count is 4 bytes per embedding row, LRU keeps none; a table at or
// under min_rows has no cache and no counts).
func TestOptions(t *testing.T) {
	reftest.CheckConfigure(t, newMP, mpcache.Name,
		`{"capacity":0}`, `{"capacity":8,"ways":3}`, `{"capacity":8,"ways":64}`,
		`{"capacity":8,"replacement":"fifo"}`, `{"capacity":8,"lru_clock":"wall"}`,
		`{"capacity":8,"fraction":1.5}`, `{"capacity":8,"hash":"crc"}`, `{"capacity":8,"min_rows":-1}`,
		`{"capacity":8,"colour":"red"}`, `{"capacity":8,"per_table":true,"fraction":0.1}`)
	reftest.CheckNeeds(t, newMP, map[string]cache.Needs{
		`{"capacity":8}`:                            {Memory: []cache.TableMemory{{CachedRows: 8, CachedRowBytes: 20, RowBytes: 4}}},
		`{"capacity":8,"past":3,"future":2}`:        {Memory: []cache.TableMemory{{CachedRows: 8, CachedRowBytes: 20, RowBytes: 4}}},
		`{"capacity":8,"replacement":"lru"}`:        {Memory: []cache.TableMemory{{CachedRows: 8, CachedRowBytes: 20}}},
		`{"capacity":1000,"fraction":0.1,"ways":4}`: {Memory: []cache.TableMemory{{CachedRows: 100, CachedRowBytes: 20, RowBytes: 4}}},
		`{"capacity":8,"min_rows":1000}`:            {Memory: []cache.TableMemory{{}}},
	},
		map[string]string{`{"capacity":8,"ways":5}`: "ways", `{"capacity":8,"fraction":-1}`: "fraction"})
}

// Each table's sets and ways: a fraction of its own rows in sets of α,
// at least one set, capped at the host's capacity; fewer slots than α
// make one smaller set; a table of at most min_rows rows has none.
func TestGeometry(t *testing.T) {
	p := reftest.Configured(t, mpcache.New(), 1, `{"capacity":5000,"ways":32,"fraction":0.05,"min_rows":10}`,
		100000, 1000, 300, 10, 4000000).(*mpcache.Policy)
	for tab, want := range [][2]int{{156, 32}, {1, 32}, {1, 32}, {0, 0}, {156, 32}} {
		if s, w := p.Geometry(tab); s != want[0] || w != want[1] {
			t.Errorf("table %d: %d sets × %d ways, want %d × %d", tab, s, w, want[0], want[1])
		}
	}
	// per_table: the host's capacity is 5 % of the largest table (the
	// host's cache.size 0.05), so every table caches 5 % of its own rows.
	r := reftest.Configured(t, mpcache.New(), 1, `{"capacity":5000,"ways":32,"per_table":true}`,
		100000, 1000, 40000).(*mpcache.Policy)
	for tab, want := range [][2]int{{156, 32}, {1, 32}, {62, 32}} {
		if s, w := r.Geometry(tab); s != want[0] || w != want[1] {
			t.Errorf("per_table, table %d: %d sets × %d ways, want %d × %d", tab, s, w, want[0], want[1])
		}
	}
	q := reftest.Configured(t, mpcache.New(), 1, `{"capacity":100,"ways":16}`, 1000, 12).(*mpcache.Policy)
	for tab, want := range [][2]int{{6, 16}, {1, 12}} {
		if s, w := q.Geometry(tab); s != want[0] || w != want[1] {
			t.Errorf("capacity 100, table %d: %d sets × %d ways, want %d × %d", tab, s, w, want[0], want[1])
		}
	}
}
