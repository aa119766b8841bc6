package cast

import (
	"context"
	"errors"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the cast stage's kind.
const Kind stage.Kind = "cast"

// NewFactory returns the cast stage's factory.
func NewFactory() stage.Factory {
	return stage.NewFactory(Kind,
		func() stage.Config { return &Config{Device: "gpu", Transfer: true} },
		func(_ context.Context, set stage.Settings, cfg stage.Config) (any, error) {
			c := cfg.(*Config)
			if set.Layout == nil {
				return nil, errors.New("cast needs the batch layout")
			}
			s := &caster{set: set, name: c.Device, transfer: c.Transfer}
			var err error
			s.dev, err = set.Device("device", c.Device)
			return s, err
		},
		stage.WithFields(
			[]batch.Field{batch.CastSrc, batch.CastDst, batch.CastRows, Lookups, UniqueRows},
			[]batch.Field{batch.IDs, batch.Offsets}))
}
