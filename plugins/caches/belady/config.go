package belady

import (
	"fmt"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Config is the Belady policy's options: only what the host fills.
// Capacity is the number of rows each table's cache holds; Future, the
// number of future batches the host sends with each request, is the
// policy's horizon (the more, the closer to the true optimum). Past is
// accepted and ignored.
type Config struct {
	cache.Options
}

// Validate checks the options.
func (c Config) Validate() error {
	if c.Capacity < 1 {
		return fmt.Errorf("%w: capacity: must be ≥ 1, got %d", plugin.ErrInvalidConfig, c.Capacity)
	}
	return nil
}

func fields() []plugin.Field {
	return []plugin.Field{
		{Name: "capacity", Type: "int", Description: "rows per table the cache holds (≥ 1; the host fills it from the graph's cache.size)"},
		{Name: "future", Type: "int", Default: "0", Description: "future batches the host sends with each request (filled by the host): the policy's horizon"},
		{Name: "past", Type: "int", Default: "0", Description: "the host's past window; ignored"},
	}
}
