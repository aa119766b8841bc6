package collect

import (
	"context"
	"errors"
	"fmt"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the collect stage's kind.
const Kind stage.Kind = "collect"

// NewFactory returns the collect stage's factory.
func NewFactory() stage.Factory {
	return stage.NewFactory(Kind,
		func() stage.Config { return &Config{Device: "host", StorageDevice: "gpu"} },
		func(_ context.Context, set stage.Settings, cfg stage.Config) (any, error) {
			c := cfg.(*Config)
			if set.Tables == nil || set.Storage == nil || set.Layout == nil {
				return nil, errors.New("collect needs the host tables, the Storage and the batch layout")
			}
			if set.Graph == nil || set.Graph.Pipeline != config.Sequential {
				return nil, ErrPipelined
			}
			col := &collector{set: set}
			var ok bool
			if col.host, ok = set.Devices[c.Device]; !ok {
				return nil, fmt.Errorf("device %q is not a device of the graph", c.Device)
			}
			if c.StorageDevice != "" {
				if col.dev, ok = set.Devices[c.StorageDevice]; !ok {
					return nil, fmt.Errorf("storage_device %q is not a device of the graph", c.StorageDevice)
				}
			}
			return col, nil
		})
}

// ErrPipelined is returned when collect is created in a pipelined graph.
// Pipelined, a batch's collect overlaps earlier batches' insert and train,
// which write the same Storage slots and host rows: ScratchPipe's RAW
// hazards 2–4, which only its Plan-stage hold mask removes. Until plan holds
// rows in flight, the cache stages are exact only one batch at a time.
var ErrPipelined = errors.New("collect needs pipeline: sequential (pipelined, it would read Storage slots and host rows that earlier batches' insert and train are still writing)")
