package rpaccel

import (
	"container/list"
	"slices"
	"sync"
)

// Lookups counts where a batch's embedding lookups were served.
type Lookups struct {
	Total         int64
	StaticHits    int64 // in the static (hot) cache
	LookaheadHits int64 // in the look-ahead cache: prefetched, or fetched earlier in the query
	Misses        int64 // from DRAM
	// HitBytes and MissBytes are the vector bytes those lookups moved.
	HitBytes, MissBytes int64
	// Prefetched and PrefetchedBytes are the distinct rows (and their
	// bytes) the look-ahead cache fetched from DRAM ahead of the stage,
	// with prefetch on: DRAM traffic that overlaps the previous stage.
	Prefetched, PrefetchedBytes int64
}

// HitRate is the share of lookups served on chip.
func (l Lookups) HitRate() float64 {
	if l.Total == 0 {
		return 0
	}
	return float64(l.StaticHits+l.LookaheadHits) / float64(l.Total)
}

// embCache is the stage's share of RPAccel's embedding caches (Sec. 6.2,
// Fig. 10c), simulated over each batch's own keys so that the hit rate is
// the data's, never a constant:
//
//   - static: the hottest rows, provisioned once. The device profiles the
//     keys of its first profile_batches requests (as flowrun's static cache
//     plugin profiles its warm-up batches), charging them against an empty
//     static cache, then fills it with the most frequent rows (ties: lower
//     key first) until its bytes are spent, and never changes it again.
//   - look-ahead: the vectors of the query in flight. Without prefetch it
//     is a demand cache (LRU) for the query: a row fetched from DRAM is
//     served from it when the query looks it up again. With prefetch (a
//     backend stage, Sec. 6.2: it "prefetches embeddings for the backend
//     as the frontend finishes sub-batches"), the query's distinct
//     static-missing rows, in first-touch order, are already there up to
//     its capacity (their DRAM time overlapped with the frontend); rows
//     beyond it miss on every lookup.
//
// It holds one look-ahead capacity per query (the paper sizes 4 MB for the
// worst case of the queries in flight).
type embCache struct {
	staticBytes, lookaheadBytes int64
	prefetch                    bool
	profileBatches              int

	mu       sync.Mutex
	profiled int
	counts   map[uint64]int64
	hot      map[uint64]bool
}

func newEmbCache(staticBytes, lookaheadBytes int64, prefetch bool, profileBatches int) *embCache {
	return &embCache{staticBytes: staticBytes, lookaheadBytes: lookaheadBytes, prefetch: prefetch,
		profileBatches: profileBatches, counts: map[uint64]int64{}}
}

// simulate serves one batch's lookups, keys in lookup order, each row of
// rowBytes(key) bytes.
func (e *embCache) simulate(keys []uint64, rowBytes func(uint64) int64) Lookups {
	e.mu.Lock()
	defer e.mu.Unlock()
	var res Lookups
	res.Total = int64(len(keys))
	rest := make([]uint64, 0, len(keys))
	for _, k := range keys {
		if e.hot[k] {
			res.StaticHits++
			res.HitBytes += rowBytes(k)
		} else {
			rest = append(rest, k)
		}
	}
	la, fetched := e.lookahead(rest, rowBytes)
	for _, k := range fetched {
		res.Prefetched++
		res.PrefetchedBytes += rowBytes(k)
	}
	for i, k := range rest {
		if la[i] {
			res.LookaheadHits++
			res.HitBytes += rowBytes(k)
		} else {
			res.Misses++
			res.MissBytes += rowBytes(k)
		}
	}
	if e.hot == nil {
		for _, k := range keys {
			e.counts[k]++
		}
		if e.profiled++; e.profiled >= e.profileBatches {
			e.provision(rowBytes)
		}
	}
	return res
}

// lookahead says which of a query's static-missing lookups the look-ahead
// cache serves, and which rows it prefetched.
func (e *embCache) lookahead(keys []uint64, rowBytes func(uint64) int64) (hit []bool, prefetched []uint64) {
	hit = make([]bool, len(keys))
	if e.lookaheadBytes == 0 {
		return hit, nil
	}
	if e.prefetch {
		resident := map[uint64]bool{}
		left := e.lookaheadBytes
		for i, k := range keys {
			if _, seen := resident[k]; !seen {
				resident[k] = rowBytes(k) <= left
				if resident[k] {
					left -= rowBytes(k)
					prefetched = append(prefetched, k)
				}
			}
			hit[i] = resident[k]
		}
		return hit, prefetched
	}
	lru := list.New()
	where := map[uint64]*list.Element{}
	used := int64(0)
	for i, k := range keys {
		if el, ok := where[k]; ok {
			hit[i] = true
			lru.MoveToFront(el)
			continue
		}
		size := rowBytes(k)
		if size > e.lookaheadBytes {
			continue
		}
		for used+size > e.lookaheadBytes {
			old := lru.Remove(lru.Back()).(uint64)
			delete(where, old)
			used -= rowBytes(old)
		}
		where[k] = lru.PushFront(k)
		used += size
	}
	return hit, nil
}

// provision fills the static cache with the most frequent profiled rows.
func (e *embCache) provision(rowBytes func(uint64) int64) {
	keys := make([]uint64, 0, len(e.counts))
	for k := range e.counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b uint64) int {
		if ca, cb := e.counts[a], e.counts[b]; ca != cb {
			if ca > cb {
				return -1
			}
			return 1
		}
		if a < b {
			return -1
		}
		return 1
	})
	e.hot = map[uint64]bool{}
	left := e.staticBytes
	for _, k := range keys {
		if size := rowBytes(k); size <= left {
			e.hot[k] = true
			left -= size
		} else if left < 4 {
			break
		}
	}
	e.counts = nil
}
