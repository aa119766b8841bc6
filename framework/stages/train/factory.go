package train

import (
	"context"
	"errors"

	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the train stage's kind.
const Kind stage.Kind = "train"

// NewFactory returns the train stage's factory.
func NewFactory() stage.Factory {
	return stage.NewFactory(Kind,
		func() stage.Config {
			return &Config{LearningRate: 0.05, Reduce: "sum", HostDevice: "host", ComputeDevice: "gpu", Source: SourceHost, Backward: BackwardCoalesce}
		},
		func(_ context.Context, set stage.Settings, cfg stage.Config) (any, error) {
			if set.Kernel == nil || set.Model == nil {
				return nil, errors.New("train needs a kernel and a model plugin")
			}
			c := cfg.(*Config)
			if c.Source == SourceStorage {
				if set.Storage == nil {
					return nil, errors.New("train with source: storage needs the run's Storage (and collect and insert upstream)")
				}
			}
			return newTrainer(set, c)
		})
}
