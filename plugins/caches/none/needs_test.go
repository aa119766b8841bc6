package none

import (
	"testing"

	"github.com/flowrun/flowrun/plugins/caches/internal/reftest"
	"github.com/flowrun/flowrun/sdk/cache"
)

// No cache never evicts, so it holds every window.
func TestNeeds(t *testing.T) {
	reftest.CheckNeeds(t, New,
		map[string]cache.Needs{`{"capacity": 0, "past": 3}`: {HoldsWindows: true}},
		map[string]string{`{"capacity": -1}`: "capacity"})
}
