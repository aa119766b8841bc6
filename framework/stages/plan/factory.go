package plan

import (
	"context"
	"errors"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the plan stage's kind.
const Kind stage.Kind = "plan"

// The stats plan records on each batch for its span; the misses and the
// victims, which the stages downstream read, are batch.Misses and
// batch.VictimCount.
var (
	// Hits is the policy's hit lookups.
	Hits = batch.NewStat("hits")
	// Evictions is the policy's evicted rows.
	Evictions = batch.NewStat("evictions")
	// Future is how many later batches' IDs came with the request.
	Future = batch.NewStat("future")
)

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
		},
		stage.WithFields(
			[]batch.Field{batch.Slots, batch.Hits, batch.Victims, batch.Misses, batch.VictimCount, Hits, Evictions, Future},
			[]batch.Field{batch.IDs}))
}
