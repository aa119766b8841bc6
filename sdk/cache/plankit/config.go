package plankit

import (
	"context"
	"fmt"
	"math"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Validator is a policy's typed options.
type Validator interface{ Validate() error }

// Decode decodes setup's options over cfg (which holds the defaults),
// validates them and checks the tables: what every policy's Configure, and
// its Needs, does before anything else. A bad option is a *plugin.FieldError.
func Decode(setup plugin.Setup, cfg Validator) error {
	if err := plugin.DecodeOptions(setup.Options, cfg); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	return CheckTables(setup.Tables)
}

// Profiled is the typed options of a policy that ranks rows by a
// frequency profile the host may fill before Configure (static top-N,
// HECA's hot part): Needs checks them as they stand before the host has
// profiled, when the frequencies it will fill are not yet there.
type Profiled interface {
	Validator
	// ValidateBeforeProfile is Validate without the frequencies.
	ValidateBeforeProfile() error
	// HostProfiles reports whether the options ask for the host's
	// frequencies without giving them; ProfileBatches is then how many
	// training batches the host profiles.
	HostProfiles() bool
	ProfileBatches() int
	// HoldsWindows is cache.Needs.HoldsWindows under these options.
	HoldsWindows() bool
}

// NeedsOfProfiled is the Needs of a Profiled policy under setup, decoded
// over cfg (the defaults): whether it holds the host's windows, and the
// warm-up profile is asked for when its options want the host's
// frequencies (uncapped: Setup does not say how many training batches the
// run has; the host caps it). A bad option is a *plugin.FieldError.
func NeedsOfProfiled(setup plugin.Setup, cfg Profiled) (cache.Needs, error) {
	if err := plugin.DecodeOptions(setup.Options, cfg); err != nil {
		return cache.Needs{}, err
	}
	if err := cfg.ValidateBeforeProfile(); err != nil {
		return cache.Needs{}, err
	}
	if err := CheckTables(setup.Tables); err != nil {
		return cache.Needs{}, err
	}
	needs := cache.Needs{HoldsWindows: cfg.HoldsWindows()}
	if cfg.HostProfiles() {
		needs.ProfileBatches = cfg.ProfileBatches()
	}
	return needs, nil
}

// CheckTables rejects a Setup whose tables cannot hold rows.
func CheckTables(tables []plugin.Table) error {
	for t, tab := range tables {
		if tab.Rows < 0 {
			return fmt.Errorf("%w: table %d: rows must be ≥ 0, got %d", plugin.ErrInvalidConfig, t, tab.Rows)
		}
	}
	return nil
}

// HostOptions are the options of a policy that has none of its own: only
// what the host fills (cache.Options), with at least one row per table.
// The host's windows are accepted and ignored.
type HostOptions struct {
	cache.Options
}

// Validate checks the capacity.
func (o HostOptions) Validate() error { return CheckCapacity(o.Capacity, 1) }

// CheckHost adds to errs what is wrong with the options the host fills
// (capacity ≥ 1, windows ≥ 0), for a policy whose options embed
// cache.Options beside its own and check them all in one pass.
func CheckHost(o cache.Options, errs *plugin.FieldErrors) {
	if o.Capacity < 1 {
		errs.Add("capacity", "must be ≥ 1, got %d", o.Capacity)
	}
	if o.Past < 0 {
		errs.Add("past", "must be ≥ 0, got %d", o.Past)
	}
	if o.Future < 0 {
		errs.Add("future", "must be ≥ 0, got %d", o.Future)
	}
}

// CheckCapacity is an options' capacity check: capacity must be ≥ least.
func CheckCapacity(capacity, least int64) error {
	if capacity < least {
		return plugin.FieldErrorf("capacity", "must be ≥ %d, got %d", least, capacity)
	}
	return nil
}

// Capacity is the slots table t gets: capacity, capped at the table's rows
// so that a generous capacity does not allocate memory no row can use.
func Capacity(capacity int64, t int, tab plugin.Table) (int32, error) {
	c := min(capacity, tab.Rows)
	if c > math.MaxInt32 {
		return 0, plugin.FieldErrorf("capacity", "%d rows for table %d exceeds %d", c, t, math.MaxInt32)
	}
	return int32(c), nil
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

// Info describes a cache policy.
func Info(name, version, description string, config []plugin.Field) plugin.Info {
	return plugin.NewInfo(plugin.KindCache, name, version, description, config)
}

// CapacityField documents the capacity the host fills, for a policy that
// caches rows.
var CapacityField = plugin.Field{Name: "capacity", Type: "int", Description: "rows per table the cache holds (≥ 1; the host fills it from the graph's cache.size)"}

// IgnoredWindow documents one of the host's windows ("past" or "future")
// that a policy accepts and ignores.
func IgnoredWindow(name string) plugin.Field {
	return plugin.Field{Name: name, Type: "int", Default: "0", Description: "the host's " + name + " window; ignored"}
}

// HostFields documents HostOptions: the capacity and both ignored windows.
func HostFields() []plugin.Field {
	return []plugin.Field{CapacityField, IgnoredWindow("past"), IgnoredWindow("future")}
}

// Windowless is embedded by a policy that holds no pipeline window and has
// only HostOptions (an LRU, say): its Needs checks the options and declares
// nothing, so a host keeps the policy to graphs where it is exact.
type Windowless struct{}

// Needs implements cache.Declarer: the zero Needs, or the options' error.
func (Windowless) Needs(_ context.Context, setup plugin.Setup) (cache.Needs, error) {
	return cache.Needs{}, Decode(setup, &HostOptions{})
}

// ConfigureTables is the Configure of a policy with only HostOptions: it
// decodes them, builds one table per embedding table with build (given its
// Capacity) and hands them to install under g's lock.
func ConfigureTables[T any](g *Guard, setup plugin.Setup, build func(c int32) T, install func([]T)) error {
	var cfg HostOptions
	if err := Decode(setup, &cfg); err != nil {
		return err
	}
	tables, err := PerTable(cfg.Capacity, setup.Tables, func(_ int, c int32) T { return build(c) })
	if err != nil {
		return err
	}
	g.Configure(setup.Tables, func() { install(tables) })
	return nil
}
