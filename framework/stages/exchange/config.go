package exchange

import (
	"errors"

	"github.com/flowrun/flowrun/framework/config"
)

// Config is the exchange stage's options.
type Config struct {
	// Device names the device whose link the rows cross.
	Device string `mapstructure:"device"`
	// DSF is whether the batch's sparse features were de-duplicated (HECA
	// Sec. 5.2) before they reached the link: true (the default), each
	// missed row crosses once per table and batch (collect's staged rows);
	// false, HECA's no-DSF baseline, every missed lookup crosses, a row
	// as often as the batch looks it up (plan's misses), so the DSF gain
	// is a modeled figure of the same run.
	DSF *bool `mapstructure:"dsf"`
}

// dedup resolves DSF.
func (c *Config) dedup() bool { return c.DSF == nil || *c.DSF }

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
