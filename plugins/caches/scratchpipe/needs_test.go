package scratchpipe

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// ScratchPipe's Hold mask holds the windows and never bypasses; its own
// windows count where they are wider than the host's.
func TestNeeds(t *testing.T) {
	tables := []plugin.Table{{Rows: 1000, Dim: 4}}
	held := cache.Needs{HoldsWindows: true, NeverBypasses: true}
	for _, c := range []struct {
		opts string
		want cache.Needs
	}{
		{`{"capacity": 64, "past": 3, "future": 2}`, held},
		{`{"capacity": 64}`, held},
		{`{"capacity": 64, "past": 3, "future": 2, "past_window": 5, "future_window": 2}`, cache.Needs{HoldsWindows: true, NeverBypasses: true, Past: 5}},
		{`{"capacity": 64, "past_window": 4, "future_window": 3}`, cache.Needs{HoldsWindows: true, NeverBypasses: true, Past: 4, Future: 3}},
		{`{"capacity": 64, "past": 3, "future": 2, "past_window": 1}`, cache.Needs{NeverBypasses: true}},
	} {
		got, err := New().(cache.Declarer).Needs(context.Background(), plugin.Setup{Tables: tables, Options: json.RawMessage(c.opts)})
		if err != nil || got != c.want {
			t.Errorf("%s: Needs = %+v, %v; want %+v", c.opts, got, err, c.want)
		}
	}
	_, err := New().(cache.Declarer).Needs(context.Background(), plugin.Setup{Tables: tables, Options: json.RawMessage(`{"capacity": 64, "victim": "mru"}`)})
	if key, _ := plugin.FieldOf(err); key != "victim" || err.Error() != `invalid plugin configuration: victim: must be lru, lfu or random, got "mru"` {
		t.Errorf("bad victim: %v (key %q)", err, key)
	}
}
