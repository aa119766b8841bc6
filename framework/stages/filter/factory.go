package filter

import (
	"context"
	"errors"
	"fmt"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the filter stage's kind.
const Kind stage.Kind = "filter"

// Kept is the candidates filter passes on, for its span.
var Kept = batch.NewStat("kept")

// NewFactory returns the filter stage's factory.
func NewFactory() stage.Factory {
	return stage.NewFactory(Kind,
		func() stage.Config { return &Config{K: 16, Device: "host"} },
		func(_ context.Context, set stage.Settings, cfg stage.Config) (any, error) {
			c := cfg.(*Config)
			if set.Layout == nil || set.Metrics == nil {
				return nil, errors.New("filter needs the batch layout and the run's metrics")
			}
			if c.K > set.Layout.BatchSize {
				return nil, fmt.Errorf("k: %d is more than the %d candidates of a batch (dataset.batch_size)", c.K, set.Layout.BatchSize)
			}
			f := &filter{set: set, k: c.K, name: c.Device}
			var err error
			f.dev, err = set.Device("device", c.Device)
			return f, err
		},
		stage.WithFields([]batch.Field{batch.TopK, Kept}, []batch.Field{batch.Scores, batch.Labels}))
}
