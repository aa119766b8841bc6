package belady

import (
	"github.com/flowrun/flowrun/plugins/caches/internal/planreq"
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
	return planreq.CheckCapacity(c.Capacity, 1)
}

func fields() []plugin.Field {
	return []plugin.Field{
		planreq.CapacityField,
		{Name: "future", Type: "int", Default: "0", Description: "future batches the host sends with each request (filled by the host): the policy's horizon"},
		planreq.IgnoredWindow("past"),
	}
}
