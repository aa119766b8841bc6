package scratchpipe

import (
	"context"
	"errors"
	"testing"

	"github.com/flowrun/flowrun/plugins/caches/internal/reftest"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// TestSnapshot: LRU and LFU victims, with the windows held; random victims
// take no snapshot (a resumed run restarts the policy cold).
func TestSnapshot(t *testing.T) {
	for _, victim := range []string{"lru", "lfu"} {
		t.Run(victim, func(t *testing.T) {
			reftest.CheckSnapshot(t, func() cache.Cache { return New() },
				`{"capacity":40,"past_window":3,"future_window":2,"victim":"`+victim+`"}`, 2)
		})
	}
	c := reftest.Configured(t, New(), 3, `{"capacity":40,"victim":"random"}`, 100)
	if _, err := cache.SnapshotOf(context.Background(), c); !errors.Is(err, plugin.ErrUnsupported) {
		t.Fatalf("random victims: %v, want ErrUnsupported", err)
	}
}
