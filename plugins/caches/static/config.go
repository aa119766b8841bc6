package static

import (
	"fmt"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/plankit"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// Where the top-N rows come from.
const (
	// ProfileFirstBatches counts the IDs of the first WarmupBatches batches
	// the policy plans (which bypass the cache while it learns).
	ProfileFirstBatches = "first_batches"
	// ProfileFrequencies takes the counts the host passes in Frequencies:
	// the dataset's own access PDF, or a warm-up pass the host ran.
	ProfileFrequencies = "frequencies"
)

// DefaultWarmupBatches is how many batches first_batches profiles.
const DefaultWarmupBatches = 16

// Config is the static policy's options.
type Config struct {
	// Options are what the host fills: capacity (the N of top-N, per
	// table) and its windows. A static cache never evicts, so it holds any
	// window; Past only rules out first_batches (see the package doc).
	cache.Options
	// Profile is first_batches or frequencies. Empty: frequencies when
	// Frequencies is set, else first_batches.
	Profile string `json:"profile"`
	// WarmupBatches is how many batches first_batches counts.
	WarmupBatches int `json:"warmup_batches"`
	// Frequencies (frequencies) is a region of int64 (table, row, count)
	// triples, in any order, repeated pairs summed. Rows it does not list
	// count 0 and are never cached.
	Frequencies *region.Ref `json:"frequencies"`
}

func defaultConfig() Config { return Config{WarmupBatches: DefaultWarmupBatches} }

// profile resolves Profile.
func (c Config) profile() string {
	if c.Profile == "" && c.Frequencies != nil {
		return ProfileFrequencies
	}
	if c.Profile == "" {
		return ProfileFirstBatches
	}
	return c.Profile
}

// hostProfiles reports whether the options ask for the host's frequencies
// without giving them: the host then profiles the first WarmupBatches
// training batches and fills Frequencies before Configure (Needs).
func (c Config) HostProfiles() bool {
	return c.Profile == ProfileFrequencies && c.Frequencies == nil
}

// HoldsWindows: a static cache never evicts, so it holds any window.
func (c Config) HoldsWindows() bool { return true }

// ProfileBatches is how many training batches the host profiles.
func (c Config) ProfileBatches() int { return c.WarmupBatches }

// ValidateBeforeProfile checks the options as they stand before the host
// has profiled (Needs).
func (c Config) ValidateBeforeProfile() error { return c.validate(true) }

// Validate checks the options, joining every error.
func (c Config) Validate() error { return c.validate(false) }

// validate checks the options; before the host has profiled (Needs), the
// frequencies it will fill are not yet missing.
func (c Config) validate(beforeProfile bool) error {
	var errs plugin.FieldErrors
	plankit.CheckHost(c.Options, &errs)
	switch c.profile() {
	case ProfileFirstBatches:
		if c.WarmupBatches < 1 {
			errs.Add("warmup_batches", "must be ≥ 1, got %d", c.WarmupBatches)
		}
		if c.Frequencies != nil {
			errs.Add("frequencies", "given, but profile is %s", ProfileFirstBatches)
		}
		if c.Past > 0 {
			errs.Add("profile", "%s needs a sequential graph (the host's past window is %d: warm-up batches in flight would still train hot rows on the host when they are filled); pass the host's frequencies instead", ProfileFirstBatches, c.Past)
		}
	case ProfileFrequencies:
		if beforeProfile && c.HostProfiles() {
			if c.WarmupBatches < 1 {
				errs.Add("warmup_batches", "must be ≥ 1, got %d", c.WarmupBatches)
			}
		} else if c.Frequencies == nil || c.Frequencies.IsZero() {
			errs.Add("frequencies", "profile %s needs the host's (table, row, count) region", ProfileFrequencies)
		} else if c.Frequencies.Length%24 != 0 || c.Frequencies.Length < 0 {
			errs.Add("frequencies", "%d bytes is not a whole number of (table, row, count) int64 triples", c.Frequencies.Length)
		}
	default:
		errs.Add("profile", "must be %s or %s, got %q", ProfileFirstBatches, ProfileFrequencies, c.Profile)
	}
	return errs.Err()
}

func fields() []plugin.Field {
	return []plugin.Field{
		{Name: "capacity", Type: "int", Description: "N: hot rows per table kept in the cache (≥ 1; the host fills it from the graph's cache.size)"},
		{Name: "profile", Type: "string", Default: "frequencies when given, else first_batches", Description: "where the top-N come from: first_batches (count the first warmup_batches batches, which bypass) or frequencies (the host's counts)"},
		{Name: "warmup_batches", Type: "int", Default: fmt.Sprint(DefaultWarmupBatches), Description: "batches first_batches counts (≥ 1)"},
		{Name: "frequencies", Type: "region ref", Description: "frequencies: a region of int64 (table, row, count) triples, e.g. the dataset's access PDF or a host warm-up pass"},
		{Name: "past", Type: "int", Default: "0", Description: "the host's past window (filled by the host); first_batches needs 0 (a sequential graph)"},
		{Name: "future", Type: "int", Default: "0", Description: "the host's future window (filled by the host); ignored"},
	}
}
