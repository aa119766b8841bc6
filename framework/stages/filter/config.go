package filter

import (
	"fmt"

	"github.com/flowrun/flowrun/framework/config"
)

// Config is the filter stage's options.
type Config struct {
	// K is how many candidates pass to the next stage: the k highest
	// scores of the batch's candidates (1 ≤ k ≤ dataset.batch_size).
	K int `mapstructure:"k"`
	// Device names the device that filters (RecPipe's frontends filter on
	// the host CPU; RPAccel has an on-chip top-k unit); reading the scores
	// and selecting the top k is charged to it. Empty charges nothing.
	Device string `mapstructure:"device"`
}

// Validate checks the options. That k fits the batch is checked when the
// stage is created, where the dataset's batch size is known.
func (c *Config) Validate() error {
	if c.K < 1 {
		return config.At("k", fmt.Errorf("must be ≥ 1, got %d", c.K))
	}
	return nil
}

// DeviceNames lists the devices the stage uses, for the graph's checks.
func (c *Config) DeviceNames() []string {
	if c.Device == "" {
		return nil
	}
	return []string{c.Device}
}
