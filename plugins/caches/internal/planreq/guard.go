package planreq

import (
	"fmt"
	"math"
	"sync"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// Validator is a policy's typed Config.
type Validator interface{ Validate() error }

// Decode decodes setup's options over cfg, validates them and checks the
// tables: what every policy's Configure does before it builds any state.
func Decode(setup plugin.Setup, cfg Validator) error {
	if err := plugin.DecodeOptions(setup.Options, cfg); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	return CheckTables(setup.Tables)
}

// Capacity is the slots table t gets: capacity, capped at the table's rows
// so that a generous capacity does not allocate memory no row can use.
func Capacity(capacity int64, t int, tab plugin.Table) (int32, error) {
	c := min(capacity, tab.Rows)
	if c > math.MaxInt32 {
		return 0, fmt.Errorf("%w: capacity: %d rows for table %d exceeds %d", plugin.ErrInvalidConfig, c, t, math.MaxInt32)
	}
	return int32(c), nil
}

// Guard serialises a policy's Configure and Plan and owns what every Plan
// maps its regions through. The zero Guard is not configured.
type Guard struct {
	mu     sync.Mutex
	mapper region.Mapper
	tables []plugin.Table // nil until Configure
}

// Configure records the run's tables and, under the lock, lets the policy
// install the state it built from them.
func (g *Guard) Configure(tables []plugin.Table, install func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tables = append([]plugin.Table{}, tables...)
	install()
}

// Plan checks and maps req under the lock (cache.PlanRequest.View) and
// hands the batch to plan. Errors from the request are prefixed by the
// policy's name.
func (g *Guard) Plan(name string, req *cache.PlanRequest, plan func(*cache.Batch) (*cache.PlanResult, error)) (*cache.PlanResult, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tables == nil {
		return nil, plugin.ErrNotConfigured
	}
	b, err := req.View(&g.mapper, g.tables)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return plan(b)
}

// Future maps and checks req's future windows
// (cache.PlanRequest.FutureIDs); call it only from inside Plan's plan.
func (g *Guard) Future(req *cache.PlanRequest) ([][]int64, error) {
	return req.FutureIDs(&g.mapper, g.tables)
}

// Info describes a built-in cache policy.
func Info(name, version, description string, config []plugin.Field) plugin.Info {
	return plugin.Info{
		Kind:        plugin.KindCache,
		Name:        name,
		Version:     version,
		APIVersion:  plugin.APIVersion,
		Description: description,
		Config:      config,
	}
}

// PerTable builds one state per table of the run, each given the table's
// Capacity.
func PerTable[T any](capacity int64, tables []plugin.Table, build func(t int, c int32) T) ([]T, error) {
	out := make([]T, len(tables))
	for t, tab := range tables {
		c, err := Capacity(capacity, t, tab)
		if err != nil {
			return nil, err
		}
		out[t] = build(t, c)
	}
	return out, nil
}

// CheckCapacity is a Config's capacity check: capacity must be ≥ least.
func CheckCapacity(capacity, least int64) error {
	if capacity < least {
		return fmt.Errorf("%w: capacity: must be ≥ %d, got %d", plugin.ErrInvalidConfig, least, capacity)
	}
	return nil
}

// CapacityField documents the capacity the host fills, for a policy that
// caches rows.
var CapacityField = plugin.Field{Name: "capacity", Type: "int", Description: "rows per table the cache holds (≥ 1; the host fills it from the graph's cache.size)"}

// IgnoredWindow documents one of the host's windows ("past" or "future")
// that a policy accepts and ignores.
func IgnoredWindow(name string) plugin.Field {
	return plugin.Field{Name: name, Type: "int", Default: "0", Description: "the host's " + name + " window; ignored"}
}
