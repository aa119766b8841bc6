package score

import (
	"errors"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/sdk/kernel"
)

// Config is the score stage's options.
type Config struct {
	// Reduce pools a bag's rows: sum or mean.
	Reduce string `mapstructure:"reduce"`
	// HostDevice names the device whose memory holds the tables (the
	// gather is charged to it); empty charges nothing.
	HostDevice string `mapstructure:"host_device"`
	// ComputeDevice names the device that runs the dense model (its FLOPs
	// and the transfer of the pooled embeddings over its link are charged
	// to it); empty charges nothing.
	ComputeDevice string `mapstructure:"compute_device"`
}

// Validate checks the options.
func (c *Config) Validate() error {
	var errs []error
	if _, err := kernel.ParseReduce(c.Reduce); err != nil {
		errs = append(errs, config.At("reduce", err))
	}
	return errors.Join(errs...)
}

// DeviceNames lists the devices the stage uses, for the graph's checks.
func (c *Config) DeviceNames() []string {
	var names []string
	for _, d := range []string{c.HostDevice, c.ComputeDevice} {
		if d != "" {
			names = append(names, d)
		}
	}
	return names
}
