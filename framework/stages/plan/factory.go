package plan

import (
	"context"
	"errors"

	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the plan stage's kind.
const Kind stage.Kind = "plan"

// NewFactory returns the plan stage's factory.
func NewFactory() stage.Factory {
	return stage.NewFactory(Kind,
		func() stage.Config {
			return &Config{PastWindow: DefaultPastWindow, FutureWindow: DefaultFutureWindow}
		},
		func(_ context.Context, set stage.Settings, cfg stage.Config) (any, error) {
			if set.Cache == nil {
				return nil, errors.New("plan needs a cache plugin")
			}
			c := cfg.(*Config)
			p := &planner{set: set, cfg: c}
			var err error
			p.dev, err = set.Device("device", c.Device)
			return p, err
		})
}
