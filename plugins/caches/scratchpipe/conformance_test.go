package scratchpipe_test

import (
	"encoding/json"
	"testing"

	"github.com/flowrun/flowrun/plugins/caches/scratchpipe"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
	"github.com/flowrun/flowrun/sdk/plugin/buildtest"
)

// The suite acts as ScratchPipe's pipelined host (past 3, future 2) and
// checks that no batch evicts what the window still needs.
func TestConformance(t *testing.T) {
	for _, victim := range []string{"lru", "lfu", "random"} {
		t.Run(victim, func(t *testing.T) {
			cachetest.Run(t, func() cache.Cache { return scratchpipe.New() },
				cachetest.WithWindows(3, 2), cachetest.WithCapacity(120),
				cachetest.WithOptions(json.RawMessage(`{"victim":"`+victim+`"}`)))
		})
	}
}

// With both windows 0 the plans are still valid, one batch at a time; the
// suite's window check then holds nothing either.
func TestConformanceNoWindows(t *testing.T) {
	cachetest.Run(t, func() cache.Cache { return scratchpipe.New() },
		cachetest.WithWindows(0, 0),
		cachetest.WithOptions(json.RawMessage(`{"past_window":0,"future_window":0}`)))
}

func TestConformanceBinary(t *testing.T) {
	bin := buildtest.Binary(t, "github.com/flowrun/flowrun/plugins/caches/scratchpipe/cmd/flowrun-cache-scratchpipe")
	cachetest.RunBinary(t, bin, cachetest.WithWindows(3, 2), cachetest.WithCapacity(120))
}
