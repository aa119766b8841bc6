package train

import (
	"strings"
	"testing"
)

func TestBackwardOptionIsChecked(t *testing.T) {
	ok := Config{LearningRate: 1, Reduce: "sum", Source: SourceHost}
	for _, c := range []struct {
		mutate func(*Config)
		want   string // "" for valid
	}{
		{func(c *Config) { c.Backward = BackwardCoalesce }, ""},
		{func(c *Config) { c.Backward = BackwardCast }, ""},
		{func(c *Config) { c.Backward = "expand" }, "backward: must be coalesce or cast"},
		{func(c *Config) { c.Backward, c.Reduce = BackwardCast, "mean" }, "cast needs reduce: sum"},
		{func(c *Config) { c.Backward, c.Source = BackwardCast, SourceStorage }, "cast needs source: host"},
	} {
		cfg := ok
		c.mutate(&cfg)
		err := cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", cfg, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: error %v, want %q", cfg, err, c.want)
		}
	}
	cfg := Config{HostDevice: "nmp", ComputeDevice: "gpu", BackwardDevice: "host"}
	if got := strings.Join(cfg.DeviceNames(), ","); got != "nmp,gpu,host" {
		t.Errorf("devices %s", got)
	}
}
