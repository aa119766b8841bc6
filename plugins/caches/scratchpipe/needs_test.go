package scratchpipe

import (
	"testing"

	"github.com/flowrun/flowrun/plugins/caches/internal/reftest"
	"github.com/flowrun/flowrun/sdk/cache"
)

// ScratchPipe's Hold mask holds the windows and never bypasses; its own
// windows count where they are wider than the host's, and narrower ones do
// not hold the host's.
func TestNeeds(t *testing.T) {
	held := cache.Needs{HoldsWindows: true, NeverBypasses: true}
	reftest.CheckNeeds(t, New, map[string]cache.Needs{
		`{"capacity": 64, "past": 3, "future": 2}`: held,
		`{"capacity": 64}`:                         held,
		`{"capacity": 64, "past": 3, "future": 2, "past_window": 5, "future_window": 2}`: {HoldsWindows: true, NeverBypasses: true, Past: 5},
		`{"capacity": 64, "past_window": 4, "future_window": 3}`:                         {HoldsWindows: true, NeverBypasses: true, Past: 4, Future: 3},
		`{"capacity": 64, "past": 3, "future": 2, "past_window": 1}`:                     {NeverBypasses: true},
	}, map[string]string{
		`{"capacity": 64, "victim": "mru"}`:                 "victim",
		`{"capacity": 64, "future": 2, "future_window": 3}`: "future_window",
	})
}
