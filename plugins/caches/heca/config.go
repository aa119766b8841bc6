package heca

import (
	"fmt"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/plankit"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// Where the hot part's frequencies come from.
const (
	// ProfileFrequencies takes the host's (table, row, count) triples: a
	// warm-up pass over the run's first WarmupBatches batches when the
	// graph gives none (Needs.ProfileBatches), HECA's offline profile of
	// "a small dataset" (Sec. 5.3).
	ProfileFrequencies = "frequencies"
	// ProfileNone has no hot part: the whole capacity is the dynamic
	// linear-probing table.
	ProfileNone = "none"
)

// Defaults of the options.
const (
	// DefaultHotCoverage is the share of profiled accesses the hot rows
	// cover (HECA Sec. 5.7, Fig. 1: hot features carry 90 % of accesses).
	DefaultHotCoverage = 0.9
	// DefaultHotMaxFraction caps the hot part at half a table's slots, so
	// that the dynamic part always has room ("is it sufficient to use them
	// as the entire cache? The answer is clearly no", Sec. 5.7). The paper
	// gives no split: a decision, documented in the README.
	DefaultHotMaxFraction = 0.5
	// DefaultWarmupBatches is how many batches the host profiles.
	DefaultWarmupBatches = 16
)

// Config is the heca policy's options.
type Config struct {
	// Options are what the host fills: capacity (slots per table, shared
	// by the hot and the dynamic part) and its windows.
	cache.Options
	// Profile is frequencies (the default) or none.
	Profile string `json:"profile"`
	// WarmupBatches is how many training batches the host profiles when
	// Profile is frequencies and Frequencies is not given.
	WarmupBatches int `json:"warmup_batches"`
	// HotCoverage selects, per table, the fewest most-frequent rows whose
	// counts reach this share of the table's profiled accesses (ties: the
	// lower row first). Unset: DefaultHotCoverage, unless HotMinCount is
	// given.
	HotCoverage *float64 `json:"hot_coverage"`
	// HotMinCount, when > 0, selects instead every row counted at least
	// this often (the paper's "frequency above a threshold").
	HotMinCount int64 `json:"hot_min_count"`
	// HotMaxFraction caps the hot rows at this fraction of a table's
	// slots, in [0, 1): the dynamic part keeps at least one slot.
	HotMaxFraction float64 `json:"hot_max_fraction"`
	// Hash is how a key finds its first probe: mix64 (the default) or
	// identity (key mod the dynamic part's size, for tests that build
	// collisions).
	Hash string `json:"hash"`
	// HashSeed seeds mix64.
	HashSeed uint64 `json:"hash_seed"`
}

func defaultConfig() Config {
	return Config{Profile: ProfileFrequencies, WarmupBatches: DefaultWarmupBatches,
		HotMaxFraction: DefaultHotMaxFraction, Hash: HashMix64}
}

// coverage resolves HotCoverage.
func (c Config) coverage() float64 {
	if c.HotCoverage != nil {
		return *c.HotCoverage
	}
	return DefaultHotCoverage
}

// hostProfiles reports whether the options ask for the host's frequencies
// without giving them (Needs.ProfileBatches).
func (c Config) HostProfiles() bool {
	return c.Profile == ProfileFrequencies && c.Frequencies == nil
}

// HoldsWindows reports that the protected set covers the host's windows,
// which it always does: Algorithm 1's current batch CB is read as every
// batch between plan and train (the host's past window; CB alone in a
// sequential graph) and its next batch NB as every future batch the host
// sends (NB alone with future 1), README "Windows".
func (c Config) HoldsWindows() bool { return true }

// ProfileBatches is how many training batches the host profiles.
func (c Config) ProfileBatches() int { return c.WarmupBatches }

// ValidateBeforeProfile checks the options as they stand before the host
// has profiled (Needs).
func (c Config) ValidateBeforeProfile() error { return c.validate(true) }

// Validate checks the options once the host has filled the frequencies.
func (c Config) Validate() error { return c.validate(false) }

// validate checks the options, joining every error; before the host has
// profiled (Needs), the frequencies it will fill are not yet missing.
func (c Config) validate(beforeProfile bool) error {
	var errs plugin.FieldErrors
	plankit.CheckHost(c.Options, &errs)
	if cov := c.coverage(); !(cov >= 0 && cov <= 1) {
		errs.Add("hot_coverage", "must be in [0, 1], got %g", cov)
	}
	if c.HotMinCount < 0 {
		errs.Add("hot_min_count", "must be ≥ 0, got %d", c.HotMinCount)
	}
	if c.HotMinCount > 0 && c.HotCoverage != nil {
		errs.Add("hot_min_count", "given with hot_coverage: choose the hot rows by one of them")
	}
	if !(c.HotMaxFraction >= 0 && c.HotMaxFraction < 1) {
		errs.Add("hot_max_fraction", "must be in [0, 1), got %g", c.HotMaxFraction)
	}
	if c.Hash != HashMix64 && c.Hash != HashIdentity {
		errs.Add("hash", "must be %s or %s, got %q", HashMix64, HashIdentity, c.Hash)
	}
	c.validateProfile(&errs, beforeProfile)
	return errs.Err()
}

// validateProfile checks the profile and its frequencies.
func (c Config) validateProfile(errs *plugin.FieldErrors, beforeProfile bool) {
	switch c.Profile {
	case ProfileNone:
		if c.Frequencies != nil {
			errs.Add("frequencies", "given, but profile is %s", ProfileNone)
		}
	case ProfileFrequencies:
		switch {
		case beforeProfile && c.HostProfiles():
			if c.WarmupBatches < 1 {
				errs.Add("warmup_batches", "must be ≥ 1, got %d", c.WarmupBatches)
			}
		case c.Frequencies == nil || c.Frequencies.IsZero():
			errs.Add("frequencies", "profile %s needs the host's (table, row, count) region", ProfileFrequencies)
		case c.Frequencies.Length%24 != 0 || c.Frequencies.Length < 0:
			errs.Add("frequencies", "%d bytes is not a whole number of (table, row, count) int64 triples", c.Frequencies.Length)
		}
	default:
		errs.Add("profile", "must be %s or %s, got %q", ProfileFrequencies, ProfileNone, c.Profile)
	}
}

// frequencies is the region the hot part is read from (nil: no hot part).
func (c Config) frequencies() *region.Ref {
	if c.Profile == ProfileNone {
		return nil
	}
	return c.Frequencies
}

func fields() []plugin.Field {
	return []plugin.Field{
		{Name: "capacity", Type: "int", Description: "slots per table, hot and dynamic parts together (≥ 1; the host fills it from the graph's cache.size)"},
		{Name: "profile", Type: "string", Default: ProfileFrequencies, Description: "where the hot rows come from: frequencies (the host's counts, a warm-up pass when the graph gives none) or none (no hot part)"},
		{Name: "warmup_batches", Type: "int", Default: fmt.Sprint(DefaultWarmupBatches), Description: "training batches the host profiles for the hot part (≥ 1)"},
		{Name: "frequencies", Type: "region ref", Description: "int64 (table, row, count) triples; filled by the host when profile is frequencies"},
		{Name: "hot_coverage", Type: "float", Default: fmt.Sprint(DefaultHotCoverage), Description: "hot rows per table: the fewest most-frequent rows covering this share of its profiled accesses (ties: lower row)"},
		{Name: "hot_min_count", Type: "int", Default: "0", Description: "> 0: hot rows are those counted at least this often (instead of hot_coverage)"},
		{Name: "hot_max_fraction", Type: "float", Default: fmt.Sprint(DefaultHotMaxFraction), Description: "at most this fraction of a table's slots are hot, in [0, 1); the rest is the dynamic part"},
		{Name: "hash", Type: "string", Default: HashMix64, Description: "first probe of a key: mix64 (splitmix64 of key + hash_seed·φ, mod the dynamic size) or identity (key mod the dynamic size)"},
		{Name: "hash_seed", Type: "uint", Default: "0", Description: "seed of mix64"},
		{Name: "past", Type: "int", Default: "0", Description: "the host's past window (filled by the host): the batches still between plan and train, held as Algorithm 1's current batch"},
		{Name: "future", Type: "int", Default: "0", Description: "the host's future window (filled by the host): the first future batch is Algorithm 1's next batch NB; every one is held"},
	}
}
