package heca

import (
	"testing"

	"github.com/flowrun/flowrun/plugins/caches/internal/reftest"
	"github.com/flowrun/flowrun/sdk/cache"
)

// Algorithm 1 protects the current and the next batch, read as every
// batch between plan and train (the host's past window) and every future
// batch the host sends: the policy holds any window; it asks the host for
// a warm-up profile when the hot part wants frequencies the graph does
// not give; it may always bypass.
func TestNeeds(t *testing.T) {
	reftest.CheckNeeds(t, New, map[string]cache.Needs{
		`{"capacity": 4, "profile": "none"}`:                         {HoldsWindows: true},
		`{"capacity": 4, "profile": "none", "future": 1}`:            {HoldsWindows: true},
		`{"capacity": 4, "profile": "none", "future": 2}`:            {HoldsWindows: true},
		`{"capacity": 4, "profile": "none", "past": 3, "future": 2}`: {HoldsWindows: true},
		`{"capacity": 4}`: {HoldsWindows: true, ProfileBatches: DefaultWarmupBatches},
		`{"capacity": 4, "warmup_batches": 40, "future": 1}`:       {HoldsWindows: true, ProfileBatches: 40},
		`{"capacity": 4, "hot_min_count": 5, "past": 1}`:           {HoldsWindows: true, ProfileBatches: DefaultWarmupBatches},
		`{"capacity": 4, "hot_coverage": 0.5, "hash": "identity"}`: {HoldsWindows: true, ProfileBatches: DefaultWarmupBatches},
	}, map[string]string{
		`{"capacity": 0, "profile": "none"}`:                       "capacity",
		`{"capacity": 4, "profile": "hot"}`:                        "profile",
		`{"capacity": 4, "warmup_batches": 0}`:                     "warmup_batches",
		`{"capacity": 4, "hot_coverage": 1.5}`:                     "hot_coverage",
		`{"capacity": 4, "hot_min_count": 3, "hot_coverage": 0.9}`: "hot_min_count",
		`{"capacity": 4, "hot_max_fraction": 1}`:                   "hot_max_fraction",
		`{"capacity": 4, "hash": "crc"}`:                           "hash",
		`{"capacity": 4, "probe": 3}`:                              "probe",
	})
}

// Configure refuses frequencies it would need and does not get.
func TestConfigure(t *testing.T) {
	reftest.CheckConfigure(t, New, Name,
		`{"capacity": 4}`, // profile frequencies, none given
		`{"capacity": 4, "profile": "none", "hash": "crc"}`,
		`{"capacity": 4, "profile": "none", "hot_max_fraction": -0.1}`,
	)
}

// The hot part is the fewest top-ranked rows reaching the coverage (ties:
// the lower row), or those counted at least hot_min_count times, capped at
// the limit; a row's slot is its rank.
func TestSelectHot(t *testing.T) {
	count := map[int64]int64{7: 50, 3: 20, 9: 20, 1: 10, 4: 0}
	for _, c := range []struct {
		coverage float64
		minCount int64
		limit    int
		want     map[int64]int32
	}{
		{0.5, 0, 10, map[int64]int32{7: 0}},                 // 50 of 100
		{0.51, 0, 10, map[int64]int32{7: 0, 3: 1}},          // ties: row 3 before 9
		{0.9, 0, 10, map[int64]int32{7: 0, 3: 1, 9: 2}},     // 90 of 100
		{1, 0, 10, map[int64]int32{7: 0, 3: 1, 9: 2, 1: 3}}, // never a row counted 0
		{1, 0, 2, map[int64]int32{7: 0, 3: 1}},              // capped
		{0, 0, 10, map[int64]int32{}},                       // no hot part
		{0.9, 20, 10, map[int64]int32{7: 0, 3: 1, 9: 2}},    // threshold instead
		{0.9, 51, 10, map[int64]int32{}},
	} {
		got := selectHot(count, c.coverage, c.minCount, c.limit)
		if len(got) != len(c.want) {
			t.Errorf("coverage %g min %d limit %d: %v, want %v", c.coverage, c.minCount, c.limit, got, c.want)
			continue
		}
		for row, s := range c.want {
			if got[row] != s {
				t.Errorf("coverage %g min %d limit %d: %v, want %v", c.coverage, c.minCount, c.limit, got, c.want)
			}
		}
	}
}
