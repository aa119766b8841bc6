package exchange

import (
	"context"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the exchange stage's kind.
const Kind stage.Kind = "exchange"

// The stats exchange records on each batch, for its span.
var (
	// BytesToDevice is the bytes of the rows moved towards the device.
	BytesToDevice = batch.NewStat("bytes_to_device")
	// BytesToHost is the bytes of the victims moved back.
	BytesToHost = batch.NewStat("bytes_to_host")
)

// NewFactory returns the exchange stage's factory. Exchange reads the
// plan's counts; collect's staged rows (batch.CollectedRows) replace the
// misses when a collect stage is upstream, which is optional.
func NewFactory() stage.Factory {
	return stage.NewFactory(Kind,
		func() stage.Config { return &Config{Device: "gpu"} },
		func(_ context.Context, set stage.Settings, cfg stage.Config) (any, error) {
			c := cfg.(*Config)
			d, err := set.Device("device", c.Device)
			return &exchanger{set: set, name: c.Device, dev: d}, err
		},
		stage.WithFields([]batch.Field{BytesToDevice, BytesToHost}, []batch.Field{batch.Misses, batch.VictimCount}))
}
