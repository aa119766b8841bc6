package static

import (
	"testing"

	"github.com/flowrun/flowrun/plugins/caches/internal/reftest"
	"github.com/flowrun/flowrun/sdk/cache"
)

// TestSnapshot snapshots once after the warm-up and once during it.
func TestSnapshot(t *testing.T) {
	reftest.CheckSnapshot(t, func() cache.Cache { return New() }, `{"capacity":16,"warmup_batches":4}`, 0)
	reftest.CheckSnapshot(t, func() cache.Cache { return New() }, `{"capacity":16,"warmup_batches":20}`, 0)
}
