package collect

import (
	"errors"

	"github.com/flowrun/flowrun/framework/config"
)

// Config is the collect stage's options.
type Config struct {
	// Device names the device whose memory holds the host tables: reading
	// the missed rows out of them is charged to it.
	Device string `mapstructure:"device"`
	// StorageDevice names the device that holds Storage: reading the
	// victims' rows out of it is charged to it. Empty charges nothing.
	StorageDevice string `mapstructure:"storage_device"`
}

// Validate checks the options.
func (c *Config) Validate() error {
	if c.Device == "" {
		return config.At("device", errors.New("must name the device of the graph that holds the host tables"))
	}
	return nil
}

// DeviceNames lists the devices the stage uses, for the graph's checks.
func (c *Config) DeviceNames() []string {
	names := []string{c.Device}
	if c.StorageDevice != "" {
		names = append(names, c.StorageDevice)
	}
	return names
}

// UsesStorage tells the runtime to create the run's Storage.
func (c *Config) UsesStorage() bool { return true }

// StorageDeviceName names the device that holds Storage, under which the
// runtime reports Storage's memory.
func (c *Config) StorageDeviceName() string { return c.StorageDevice }
