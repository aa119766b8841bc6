package shadow

import (
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/stage"
)

// The options are refused at their keys: no policy, a bad size, a
// negative backlog, a niceness beyond 19; a good list decodes with the
// default backlog and niceness.
func TestConfig(t *testing.T) {
	r, err := stage.NewRegistry(NewFactory())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		options map[string]any
		want    string
	}{
		{map[string]any{}, "policies: name at least one policy"},
		{map[string]any{"policies": []any{map[string]any{"plugin": "builtin:lru", "size": -1}}}, "policies::0::size"},
		{map[string]any{"policies": []any{map[string]any{"plugin": "builtin:lru", "size": 0.05}}, "backlog": -1}, "backlog: must be ≥ 0"},
		{map[string]any{"policies": []any{map[string]any{"plugin": "builtin:lru", "size": 0.05}}, "nice": 20}, "nice: must be 0 to 19"},
	} {
		_, err := r.DecodeOptions(string(Kind), c.options)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.options, err, c.want)
		}
	}
	cfg, err := r.DecodeOptions(string(Kind), map[string]any{"device": "gpu",
		"policies": []any{map[string]any{"plugin": "builtin:lfu", "size": 0.1, "options": map[string]any{"x": 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.(*Config)
	keys, ps := c.CachePolicies()
	if c.Backlog != DefaultBacklog || c.Nice != DefaultNice || len(ps) != 1 || ps[0].Plugin != "builtin:lfu" || ps[0].Size != 0.1 || keys[0] != "policies::0" {
		t.Errorf("decoded %+v, keys %v", c, keys)
	}
	if r := c.ModeledResources(); len(r) != 0 {
		t.Errorf("a shadow holds %v on the modeled clock, want nothing", r)
	}
}
