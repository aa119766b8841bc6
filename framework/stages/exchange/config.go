package exchange

import (
	"errors"

	"github.com/flowrun/flowrun/framework/config"
)

// Config is the exchange stage's options.
type Config struct {
	// Device names the device whose link the rows cross.
	Device string `mapstructure:"device"`
}

// Validate checks the options.
func (c *Config) Validate() error {
	if c.Device == "" {
		return config.At("device", errors.New("must name a device of the graph"))
	}
	return nil
}

// DeviceNames lists the devices the stage uses, for the graph's checks.
func (c *Config) DeviceNames() []string { return []string{c.Device} }

// ModeledResources is the link the rows cross, not the device's memory: on
// the modeled clock, exchange overlaps with stages working in that memory.
func (c *Config) ModeledResources() []string { return []string{"link:" + c.Device} }
