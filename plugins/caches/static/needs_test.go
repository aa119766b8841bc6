package static

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Static never evicts, so it holds every window; it asks the host for a
// profile of its warm-up batches only when it wants the host's frequencies
// and was given none.
func TestNeeds(t *testing.T) {
	tables := []plugin.Table{{Rows: 100, Dim: 4}}
	for _, c := range []struct {
		opts string
		want cache.Needs
	}{
		{`{"capacity": 4}`, cache.Needs{HoldsWindows: true}},
		{`{"capacity": 4, "profile": "first_batches", "warmup_batches": 3}`, cache.Needs{HoldsWindows: true}},
		{`{"capacity": 4, "profile": "frequencies"}`, cache.Needs{HoldsWindows: true, ProfileBatches: DefaultWarmupBatches}},
		{`{"capacity": 4, "profile": "frequencies", "warmup_batches": 40, "past": 3}`, cache.Needs{HoldsWindows: true, ProfileBatches: 40}},
	} {
		got, err := New().(cache.Declarer).Needs(context.Background(), plugin.Setup{Tables: tables, Options: json.RawMessage(c.opts)})
		if err != nil || got != c.want {
			t.Errorf("%s: Needs = %+v, %v; want %+v", c.opts, got, err, c.want)
		}
	}
	for opts, key := range map[string]string{
		`{"capacity": 4, "profile": "frequencies", "warmup_batches": 0}`: "warmup_batches",
		`{"capacity": 4, "profile": "hot"}`:                              "profile",
		`{"capacity": 0}`:                                                "capacity",
		`{"capacity": 4, "warmup": 3}`:                                   "warmup",
	} {
		_, err := New().(cache.Declarer).Needs(context.Background(), plugin.Setup{Tables: tables, Options: json.RawMessage(opts)})
		if got, _ := plugin.FieldOf(err); got != key {
			t.Errorf("%s: Needs error %v names %q, want %q", opts, err, got, key)
		}
	}
}
