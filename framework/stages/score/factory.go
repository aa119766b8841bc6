package score

import (
	"context"
	"errors"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the score stage's kind.
const Kind stage.Kind = "score"

// Scored is the candidates score scored in a batch, for its span.
var Scored = batch.NewStat("scored")

// NewFactory returns the score stage's factory.
func NewFactory() stage.Factory {
	return stage.NewFactory(Kind,
		func() stage.Config {
			return &Config{Reduce: "sum", HostDevice: "host", ComputeDevice: "gpu"}
		},
		func(_ context.Context, set stage.Settings, cfg stage.Config) (any, error) {
			if set.Kernel == nil || set.Model == nil || set.Tables == nil || set.Layout == nil {
				return nil, errors.New("score needs a kernel and a model plugin, the host tables and the batch layout")
			}
			return newScorer(set, cfg.(*Config))
		},
		stage.WithFields(
			[]batch.Field{batch.Pooled, batch.Scores, batch.GatherBytes, Scored},
			[]batch.Field{batch.IDs, batch.Offsets, batch.Dense, batch.Labels}))
}
