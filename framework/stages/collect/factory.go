package collect

import (
	"context"
	"errors"
	"fmt"

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
			col := &collector{set: set, cfg: c, slotOf: map[int64]int64{}, rowIn: map[int64]int64{},
				victimOf: make([]map[int64]int64, set.Layout.Tables)}
			for t := range col.victimOf {
				col.victimOf[t] = map[int64]int64{}
			}
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
