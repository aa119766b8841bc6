package exchange

import (
	"context"

	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the exchange stage's kind.
const Kind stage.Kind = "exchange"

// NewFactory returns the exchange stage's factory.
func NewFactory() stage.Factory {
	return stage.NewFactory(Kind,
		func() stage.Config { return &Config{Device: "gpu"} },
		func(_ context.Context, set stage.Settings, cfg stage.Config) (any, error) {
			c := cfg.(*Config)
			d, err := set.Device("device", c.Device)
			return &exchanger{set: set, name: c.Device, dev: d}, err
		})
}
