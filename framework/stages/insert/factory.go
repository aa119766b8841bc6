package insert

import (
	"context"
	"errors"
	"fmt"

	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the insert stage's kind.
const Kind stage.Kind = "insert"

// NewFactory returns the insert stage's factory.
func NewFactory() stage.Factory {
	return stage.NewFactory(Kind,
		func() stage.Config { return &Config{Device: "gpu", HostDevice: "host"} },
		func(_ context.Context, set stage.Settings, cfg stage.Config) (any, error) {
			c := cfg.(*Config)
			if set.Tables == nil || set.Storage == nil || set.Layout == nil {
				return nil, errors.New("insert needs the host tables, the Storage and the batch layout")
			}
			ins := &inserter{set: set, cfg: c}
			var ok bool
			if ins.dev, ok = set.Devices[c.Device]; !ok {
				return nil, fmt.Errorf("device %q is not a device of the graph", c.Device)
			}
			if c.HostDevice != "" {
				if ins.host, ok = set.Devices[c.HostDevice]; !ok {
					return nil, fmt.Errorf("host_device %q is not a device of the graph", c.HostDevice)
				}
			}
			return ins, nil
		})
}
