package load

import (
	"context"

	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the load stage's kind.
const Kind stage.Kind = "load"

// NewFactory returns the load stage's factory.
func NewFactory() stage.Factory {
	return stage.NewFactory(Kind,
		func() stage.Config { return &Config{Eval: true} },
		func(_ context.Context, set stage.Settings, cfg stage.Config) (any, error) {
			return newLoader(set, cfg.(*Config))
		},
		stage.AsSource())
}
