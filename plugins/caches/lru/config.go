package lru

import (
	"fmt"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// Config is the LRU policy's options: only the capacity the host derives
// from the graph's cache.size.
type Config struct {
	// Capacity is the number of rows each table's cache holds. A table with
	// fewer rows than Capacity holds all of them.
	Capacity int64 `json:"capacity"`
}

// Validate checks the options.
func (c Config) Validate() error {
	if c.Capacity < 1 {
		return fmt.Errorf("%w: capacity: must be ≥ 1, got %d", plugin.ErrInvalidConfig, c.Capacity)
	}
	return nil
}

func fields() []plugin.Field {
	return []plugin.Field{{
		Name:        "capacity",
		Type:        "int",
		Description: "rows per table the cache holds (≥ 1; the host fills it from the graph's cache.size)",
	}}
}
