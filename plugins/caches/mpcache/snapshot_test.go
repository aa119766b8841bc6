package mpcache_test

import (
	"testing"

	"github.com/flowrun/flowrun/plugins/caches/internal/reftest"
	"github.com/flowrun/flowrun/plugins/caches/mpcache"
	"github.com/flowrun/flowrun/sdk/cache"
)

// TestSnapshot: a policy restored from a snapshot taken halfway plans the
// second half as the uninterrupted one does (slots, hits, victims,
// counts), under LFU and both LRU clocks, direct-mapped and set-
// associative, both hashes, and with a fraction that leaves slots unused.
func TestSnapshot(t *testing.T) {
	for _, options := range []string{
		`{"capacity":16}`,
		`{"capacity":16,"ways":1}`,
		`{"capacity":16,"ways":4,"replacement":"lru"}`,
		`{"capacity":16,"ways":2,"replacement":"lru","lru_clock":"update","hash":"mix","hash_seed":3}`,
		`{"capacity":16,"ways":4,"fraction":0.04}`,
	} {
		t.Run(options, func(t *testing.T) {
			reftest.CheckSnapshot(t, func() cache.Cache { return mpcache.New() }, options, 0)
		})
	}
}
