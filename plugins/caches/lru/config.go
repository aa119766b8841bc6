package lru

import (
	"github.com/flowrun/flowrun/sdk/cache/plankit"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Config is the LRU policy's options: only what the host fills. Capacity
// is the number of rows each table's cache holds (a table with fewer rows
// holds all of them); the host's windows (past, future) are accepted and
// ignored: LRU holds no window, so it is safe only in sequential graphs.
type Config = plankit.HostOptions

func fields() []plugin.Field { return plankit.HostFields() }
