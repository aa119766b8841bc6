package mpcache_test

import (
	"encoding/json"
	"testing"

	"github.com/flowrun/flowrun/plugins/caches/mpcache"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
	"github.com/flowrun/flowrun/sdk/plugin/buildtest"
)

func newMP() cache.Cache { return mpcache.New() }

// The suite's sequential host under each replacement and associativity,
// both hashes, and a paper-style fraction.
func TestConformance(t *testing.T) {
	for name, opts := range map[string]string{
		"32WayLFU":        `{}`,
		"DirectMappedLRU": `{"ways":1,"replacement":"lru"}`,
		"DirectMappedLFU": `{"ways":1,"replacement":"lfu","hash":"mix","hash_seed":7}`,
		"4WayLRUUpdate":   `{"ways":4,"replacement":"lru","lru_clock":"update"}`,
		"Fraction":        `{"ways":8,"fraction":0.05,"min_rows":50}`,
		"PerTable":        `{"ways":2,"per_table":true}`,
	} {
		t.Run(name, func(t *testing.T) {
			cachetest.Run(t, newMP, cachetest.WithOptions(json.RawMessage(opts)))
		})
	}
}

func TestConformanceBinary(t *testing.T) {
	bin := buildtest.Binary(t, "github.com/flowrun/flowrun/plugins/caches/mpcache/cmd/flowrun-cache-mpcache")
	cachetest.RunBinary(t, bin)
	cachetest.RunBinary(t, bin, cachetest.WithOptions(json.RawMessage(`{"ways":1,"replacement":"lru"}`)))
}
