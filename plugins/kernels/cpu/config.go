package cpu

import (
	"fmt"
	"runtime"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// Config is the CPU kernel's options.
type Config struct {
	// Workers bounds how many tables are processed at once. 0 means
	// GOMAXPROCS; 1 runs the tables one after another. The result does not
	// depend on it: each table is computed by one goroutine in a fixed
	// order.
	Workers int `json:"workers"`
}

// Validate checks the options.
func (c Config) Validate() error {
	if c.Workers < 0 {
		return fmt.Errorf("%w: workers: must be ≥ 0, got %d", plugin.ErrInvalidConfig, c.Workers)
	}
	return nil
}

func (c Config) workers() int {
	if c.Workers == 0 {
		return runtime.GOMAXPROCS(0)
	}
	return c.Workers
}

func fields() []plugin.Field {
	return []plugin.Field{{
		Name:        "workers",
		Type:        "int",
		Default:     "0",
		Description: "tables processed in parallel (0: GOMAXPROCS); results are identical for any value",
	}}
}
