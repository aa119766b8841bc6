// Package planreq is what every built-in cache policy does around its own
// plan: decode and check its options and tables, build per-table state,
// and serialise Configure and Plan behind a Guard that checks and maps each
// request with the SDK's cache.PlanRequest.View (the same view a
// third-party policy uses). A policy gets either a fully checked
// cache.Batch or an error wrapping plugin.ErrInvalidRequest, before it has
// changed any of its own state: a bad request must not leave a policy
// half-updated.
package planreq

import (
	"fmt"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// CheckTables rejects a Setup whose tables cannot hold rows.
func CheckTables(tables []plugin.Table) error {
	for t, tab := range tables {
		if tab.Rows < 0 {
			return fmt.Errorf("%w: table %d: rows must be ≥ 0, got %d", plugin.ErrInvalidConfig, t, tab.Rows)
		}
	}
	return nil
}
