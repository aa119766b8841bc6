package none

import (
	"fmt"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// Config is the none policy's options. It has no options of its own; it
// accepts the capacity every host sends so that the same graph can switch
// between policies by changing only the plugin name.
type Config struct {
	// Capacity is the rows per table the host would give a cache. The none
	// policy caches nothing, so it is only checked, never used.
	Capacity int64 `json:"capacity"`
}

// Validate checks the options.
func (c Config) Validate() error {
	if c.Capacity < 0 {
		return fmt.Errorf("%w: capacity: must be ≥ 0, got %d", plugin.ErrInvalidConfig, c.Capacity)
	}
	return nil
}

// fields documents Config for Info.
func fields() []plugin.Field {
	return []plugin.Field{{
		Name:        "capacity",
		Type:        "int",
		Default:     "0",
		Description: "rows per table the host offers; ignored, since nothing is cached",
	}}
}
