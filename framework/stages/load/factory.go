package load

import (
	"context"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the load stage's kind.
const Kind stage.Kind = "load"

// The stats load records on each batch, for its span.
var (
	// Samples is the batch's samples.
	Samples = batch.NewStat("samples")
	// Lookups is the length of the batch's IDs array.
	Lookups = batch.NewStat("ids")
)

// NewFactory returns the load stage's factory.
func NewFactory() stage.Factory {
	return stage.NewFactory(Kind,
		func() stage.Config { return &Config{Eval: true} },
		func(_ context.Context, set stage.Settings, cfg stage.Config) (any, error) {
			return newLoader(set, cfg.(*Config))
		},
		stage.AsSource(),
		stage.WithFields([]batch.Field{batch.IDs, batch.Offsets, batch.Dense, batch.Labels, Samples, Lookups}, nil))
}
