package static

import (
	"testing"

	"github.com/flowrun/flowrun/plugins/caches/internal/reftest"
	"github.com/flowrun/flowrun/sdk/cache"
)

// Static never evicts, so it holds every window; it asks the host for a
// profile of its warm-up batches only when it wants the host's frequencies
// and was given none.
func TestNeeds(t *testing.T) {
	held := cache.Needs{HoldsWindows: true}
	reftest.CheckNeeds(t, New, map[string]cache.Needs{
		`{"capacity": 4}`: held,
		`{"capacity": 4, "profile": "first_batches", "warmup_batches": 3}`:           held,
		`{"capacity": 4, "profile": "frequencies"}`:                                  {HoldsWindows: true, ProfileBatches: DefaultWarmupBatches},
		`{"capacity": 4, "profile": "frequencies", "warmup_batches": 40, "past": 3}`: {HoldsWindows: true, ProfileBatches: 40},
	}, map[string]string{
		`{"capacity": 4, "profile": "frequencies", "warmup_batches": 0}`: "warmup_batches",
		`{"capacity": 4, "profile": "hot"}`:                              "profile",
		`{"capacity": 0}`:                                                "capacity",
		`{"capacity": 4, "warmup": 3}`:                                   "warmup",
	})
}
