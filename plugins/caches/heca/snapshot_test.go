package heca

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/flowrun/flowrun/plugins/caches/internal/reftest"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
)

// TestSnapshot: without a hot part, and with one from a profile.
func TestSnapshot(t *testing.T) {
	newCache := func() cache.Cache { return New() }
	reftest.CheckSnapshot(t, newCache, `{"capacity":24,"profile":"none"}`, 1)
	a := cachetest.NewArena(t, 1<<16)
	freq, err := json.Marshal(a.Int64s([]int64{0, 0, 90, 0, 1, 60, 0, 2, 40, 0, 5, 30}))
	if err != nil {
		t.Fatal(err)
	}
	reftest.CheckSnapshot(t, newCache, fmt.Sprintf(`{"capacity":24,"frequencies":%s,"hot_min_count":1}`, freq), 1)
}
