package none

import (
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/plankit"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Config is the none policy's options. It has no options of its own; it
// accepts what every host sends (the capacity, the host's windows) so that
// the same graph can switch between policies by changing only the plugin
// name. It caches nothing, so the capacity is only checked, never used.
type Config struct {
	cache.Options
}

// Validate checks the options.
func (c Config) Validate() error {
	return plankit.CheckCapacity(c.Capacity, 0)
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
