package lfu

import (
	"fmt"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Config is the LFU policy's options: only what the host fills. Capacity
// is the number of rows each table's cache holds (a table with fewer rows
// holds all of them); the host's windows (past, future) are accepted and
// ignored: LFU holds no window, so it is safe only in sequential graphs.
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
		{Name: "past", Type: "int", Default: "0", Description: "the host's past window; ignored"},
		{Name: "future", Type: "int", Default: "0", Description: "the host's future window; ignored"},
	}
}
