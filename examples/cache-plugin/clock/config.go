package clock

import (
	"fmt"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// config is the policy's options. The host always sends "capacity" (from
// the graph's cache.size: the number of rows each table's cache holds) and
// may send its windows ("past", "future"), all in the embedded
// cache.Options; the rest come from the graph's cache.options.
type config struct {
	cache.Options
	// InsertReferenced sets a newly inserted row's reference bit, so it
	// survives the hand's next pass (classic CLOCK). Without it, a row
	// that is not looked up again is the first to go.
	InsertReferenced bool `json:"insert_referenced"`
}

func defaultConfig() config { return config{InsertReferenced: true} }

func (c config) validate() error {
	if c.Capacity < 1 {
		return fmt.Errorf("%w: capacity: must be ≥ 1, got %d", plugin.ErrInvalidConfig, c.Capacity)
	}
	return nil
}

func configFields() []plugin.Field {
	return []plugin.Field{
		{Name: "capacity", Type: "int", Description: "rows per table the cache holds (≥ 1; the host fills it from cache.size)"},
		{Name: "insert_referenced", Type: "bool", Default: "true", Description: "give a newly inserted row its second chance at once"},
	}
}
