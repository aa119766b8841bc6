package heca_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/flowrun/flowrun/plugins/caches/heca"
	"github.com/flowrun/flowrun/plugins/caches/internal/reftest"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
)

// algorithm1 is the reference: HECA's Algorithm 1 as printed, on plain
// maps, with only the spec's decisions added (the probe bounded at CS
// steps; key1 searched forward from hash(key), wrapping once; bypass when
// none qualifies). Hot rows take slots [0, H) by rank and never enter the
// CHT, whose entry i is slot H + i.
type algorithm1 struct {
	hot    map[int64]int64 // row -> slot
	filled map[int64]bool  // hot rows already in their slot
	cht    map[int]int64   // index -> key; absent = empty
	cs     int
	hash   func(key int64) int
}

func newAlgorithm1(hot map[int64]int64, cs int, hash func(int64) int) *algorithm1 {
	return &algorithm1{hot: hot, filled: map[int64]bool{}, cht: map[int]int64{}, cs: cs, hash: hash}
}

// batch plans one batch of ids with next as NB; it returns the slots, the
// hits, the victims (table 0) and the number of keys that bypassed.
func (r *algorithm1) batch(ids, next []int64) ([]int64, []byte, []cachetest.Victim, int) {
	cb, nb := set(ids), set(next)
	h := int64(len(r.hot))
	done := map[int64]out{}
	var victims []cachetest.Victim
	bypasses := 0
	slots, hits := make([]int64, len(ids)), make([]byte, len(ids))
	for i, key := range ids {
		o, ok := done[key]
		if !ok {
			switch s, hot := r.hot[key]; {
			case hot:
				o = out{s, b2u(r.filled[key])}
				r.filled[key] = true
			default:
				o = r.dynamic(key, cb, nb, &victims, &bypasses, h)
			}
			done[key] = o
		}
		slots[i], hits[i] = o.slot, o.hit
	}
	return slots, hits, victims, bypasses
}

// out is one key's answer.
type out struct {
	slot int64
	hit  byte
}

// dynamic is Algorithm 1's lines 2–17 for one key.
func (r *algorithm1) dynamic(key int64, cb, nb map[int64]bool, victims *[]cachetest.Victim, bypasses *int, h int64) (o out) {
	if r.cs == 0 {
		*bypasses++
		o.slot = -1
		return o
	}
	index := r.hash(key)
	for steps := 0; steps < r.cs; steps++ { // while CHT[index] not empty and ≠ key
		k, full := r.cht[index]
		if !full || k == key {
			break
		}
		index = (index + 1) % r.cs
	}
	k, occupied := r.cht[index]
	switch {
	case occupied && k == key: // hit
		o.slot, o.hit = h+int64(index), 1
		return o
	case !occupied: // insert into the empty entry
		r.cht[index] = key
		o.slot = h + int64(index)
		return o
	}
	// Full and absent: search from index (= hash(key) after CS steps).
	for j := range r.cs {
		e := (index + j) % r.cs
		key1 := r.cht[e]
		if cb[key1] || nb[key1] || r.isHot(key1) {
			continue
		}
		r.cht[e] = key
		*victims = append(*victims, cachetest.Victim{Table: 0, Row: key1, Slot: h + int64(e)})
		o.slot = h + int64(e)
		return o
	}
	*bypasses++
	o.slot = -1
	return o
}

func (r *algorithm1) isHot(key int64) bool { _, ok := r.hot[key]; return ok }

func set(ids []int64) map[int64]bool {
	m := map[int64]bool{}
	for _, id := range ids {
		m[id] = true
	}
	return m
}

func b2u(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// replay plans batches with the policy (one table of rows rows, options,
// future window 1) and with the reference, and fails on the first
// difference in slots, hits, victims or bypasses. It returns the
// policy's counts.
func replay(t *testing.T, ref *algorithm1, rows int64, options string, batches [][]int64) heca.Counts {
	t.Helper()
	p := reftest.Configured(t, heca.New(), 1, options, rows)
	steps := reftest.PlanAll(t, p, 1, batches)
	bypassed := 0
	for i, s := range steps {
		if s.Err != nil {
			t.Fatalf("batch %d: %v", i, s.Err)
		}
		var next []int64
		if i+1 < len(batches) {
			next = batches[i+1]
		}
		slots, hits, victims, bypasses := ref.batch(batches[i], next)
		reftest.Match(t, uint64(i), 0, s.P, batches[i], slots, hits)
		reftest.MatchVictims(t, uint64(i), s.P, s.Res.Victims, victims)
		bypassed += bypasses
	}
	counts := p.(*heca.Policy).Counts()[0]
	if counts.Bypasses != int64(bypassed) {
		t.Fatalf("policy counts %d bypassed keys, the reference %d", counts.Bypasses, bypassed)
	}
	return counts
}

// pad repeats each batch's last key until every batch is as long as the
// longest: a batch and its future window share one layout, and a
// duplicate changes no answer.
func pad(batches [][]int64) [][]int64 {
	n := 0
	for _, b := range batches {
		n = max(n, len(b))
	}
	for i, b := range batches {
		for len(b) < n {
			b = append(b, b[len(b)-1])
		}
		batches[i] = b
	}
	return batches
}

func identity(cs int) func(int64) int { return func(k int64) int { return int(k % int64(cs)) } }

// Keys that collide under the identity hash: probe chains that wrap past
// the end, a full table whose resident keys are all in the current or the
// next batch (bypass), and replacements that must skip protected entries.
func TestAlgorithm1AdversarialCollisions(t *testing.T) {
	const cs = 8
	batches := [][]int64{
		{3, 11, 19, 27},                    // one chain: entries 3, 4, 5, 6
		{7, 15, 23, 3},                     // 7 at 7; 15 and 23 wrap to 0, 1; 3 hits
		{31, 2, 11, 3},                     // 31 → 2; 2 finds the table full: key1 from entry 2 on
		{1, 9, 17, 25, 33, 41, 49, 57, 65}, // nine keys of one chain for eight entries: the ninth bypasses
		{1, 9, 17, 25, 33, 41, 49, 57},     // all resident? those placed hit
		{100, 108, 116},                    // replacements must skip NB (next batch) keys
		{1, 9, 17, 25, 33, 41, 49, 57},
		{3, 3, 3, 11, 11}, // duplicates share one answer
	}
	counts := replay(t, newAlgorithm1(map[int64]int64{}, cs, identity(cs)), 1000,
		`{"capacity": 8, "profile": "none", "hash": "identity"}`, pad(batches))
	if counts.Bypasses == 0 || counts.Evictions == 0 {
		t.Fatalf("counts %+v: the bypass or the replacement went unexercised", counts)
	}
}

// Every resident protected: a full table, and a batch whose keys (with
// the next batch's) hold every entry, bypasses each new key and leaves the
// table as it was.
func TestFullTableEveryResidentProtected(t *testing.T) {
	const cs = 4
	batches := [][]int64{
		{10, 20, 30, 40},     // fill
		{10, 20, 50, 60},     // 50, 60: residents 30, 40 are in NB → bypass
		{30, 40, 70, 80},     // 30, 40 hit; 70, 80: the rest are in NB → bypass
		{10, 20, 30, 40, 90}, // every resident in CB → 90 bypasses
	}
	counts := replay(t, newAlgorithm1(map[int64]int64{}, cs, identity(cs)), 1000,
		`{"capacity": 4, "profile": "none", "hash": "identity"}`, pad(batches))
	if counts.Bypasses != 5 || counts.Evictions != 0 {
		t.Fatalf("counts %+v, want 5 bypasses and no eviction", counts)
	}
}

// A long skewed run with a hot part (hot_min_count over a profile whose
// rank is the row) and the mix64 hash: the policy and the reference agree
// batch by batch.
func TestAlgorithm1RandomReplay(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			const rows, capacity, minCount = 5000, 64, 50
			a := cachetest.NewArena(t, 1<<20)
			var triples []int64
			hot := map[int64]int64{}
			for row := range int64(200) {
				n := 1000 / (row + 1) // ranks = rows; ties by the lower row
				triples = append(triples, 0, row, n)
				if n >= minCount && len(hot) < capacity/2 {
					hot[row] = row
				}
			}
			freq, err := json.Marshal(a.Int64s(triples))
			if err != nil {
				t.Fatal(err)
			}
			opts := fmt.Sprintf(`{"capacity": %d, "frequencies": %s, "hot_min_count": %d, "hash_seed": %d}`, capacity, freq, minCount, seed)
			rng := rand.New(rand.NewPCG(seed, 7))
			batches := make([][]int64, 60)
			for i := range batches {
				for range 40 {
					batches[i] = append(batches[i], int64(rng.ExpFloat64()*40)%rows)
				}
			}
			cs := capacity - len(hot)
			hash := func(k int64) int { return heca.Hash(heca.HashMix64, seed, k, cs) }
			counts := replay(t, newAlgorithm1(hot, cs, hash), rows, opts, batches)
			if counts.HotRows != int64(len(hot)) || counts.Evictions == 0 || counts.HotLookups == 0 {
				t.Fatalf("counts %+v: want %d hot rows, evictions and hot lookups", counts, len(hot))
			}
			t.Logf("hit rate per lookup %.3f, per unique key %.3f", float64(counts.Hits)/float64(counts.Lookups), float64(counts.UniqueHits)/float64(counts.Unique))
		})
	}
}

// The hash is the documented function: splitmix64 of key + seed·φ.
func TestHashIsDocumented(t *testing.T) {
	// splitmix64's first output for state 0 is 0xE220A8397B1DCDAF.
	if got := heca.Hash(heca.HashMix64, 0, 0, 1<<62); uint64(got) != 0xE220A8397B1DCDAF%(1<<62) {
		t.Errorf("Hash(mix64, 0, 0) = %#x", got)
	}
	if got := heca.Hash(heca.HashIdentity, 9, 21, 8); got != 5 {
		t.Errorf("Hash(identity, 21, 8) = %d, want 5", got)
	}
	if heca.Hash(heca.HashMix64, 1, 5, 1000) == heca.Hash(heca.HashMix64, 2, 5, 1000) &&
		heca.Hash(heca.HashMix64, 1, 6, 1000) == heca.Hash(heca.HashMix64, 2, 6, 1000) {
		t.Error("hash_seed changes nothing")
	}
}

var _ cache.Declarer = (*heca.Policy)(nil)
