package belady

import (
	"github.com/flowrun/flowrun/sdk/cache/plankit"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Config is the Belady policy's options: only what the host fills.
// Capacity is the number of rows each table's cache holds; Future, the
// number of future batches the host sends with each request, is the
// policy's horizon (the more, the closer to the true optimum). Past is
// accepted and ignored.
type Config = plankit.HostOptions

func fields() []plugin.Field {
	return []plugin.Field{
		plankit.CapacityField,
		{Name: "future", Type: "int", Default: "0", Description: "future batches the host sends with each request (filled by the host): the policy's horizon"},
		plankit.IgnoredWindow("past"),
	}
}
