package insert

import (
	"errors"

	"github.com/flowrun/flowrun/framework/config"
)

// Config is the insert stage's options.
type Config struct {
	// Device names the device that holds Storage: writing the missed rows
	// into their slots is charged to it.
	Device string `mapstructure:"device"`
	// HostDevice names the device whose memory holds the host tables:
	// writing the victims back is charged to it. Empty charges nothing.
	HostDevice string `mapstructure:"host_device"`
}

// Validate checks the options.
func (c *Config) Validate() error {
	if c.Device == "" {
		return config.At("device", errors.New("must name the device of the graph that holds Storage"))
	}
	return nil
}

// DeviceNames lists the devices the stage uses, for the graph's checks.
func (c *Config) DeviceNames() []string {
	names := []string{c.Device}
	if c.HostDevice != "" {
		names = append(names, c.HostDevice)
	}
	return names
}

// UsesStorage tells the runtime to create the run's Storage.
func (c *Config) UsesStorage() bool { return true }

// StorageDeviceName names the device that holds Storage, under which the
// runtime reports Storage's memory.
func (c *Config) StorageDeviceName() string { return c.Device }
