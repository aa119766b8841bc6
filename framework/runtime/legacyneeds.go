package runtime

// TEMPORARY: this file goes when every built-in policy and the gRPC
// client declare their Needs (sdk/cache.Declarer). Until then it answers
// for a policy that does not, with what the host knew of the built-ins by
// name and option key before policies declared themselves, so that the
// shipped graphs keep their checks and their digests (static-cache's
// warm-up profile). Once they all declare, a policy that does not is
// taken to need nothing (cache.NeedsOf's zero Needs): delete this file,
// and in askNeeds and Validate call cache.NeedsOf directly.

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/sdk/cache"
)

// legacyNeeds is the Needs of a policy that does not declare them, by its
// name: lru, lfu and belady hold no window, scratchpipe never bypasses
// (holding its past_window/future_window options when wider), and a
// static cache asking for the host's frequencies (profile: frequencies
// without a region) gets warmup_batches of them.
func legacyNeeds(cfg *config.Config) (cache.Needs, error) {
	opts := cfg.Cache.Options
	policy := legacyPolicyName(cfg.Cache.Plugin)
	needs := cache.Needs{HoldsWindows: !map[string]bool{"lru": true, "lfu": true, "belady": true}[policy]}
	if policy == "scratchpipe" {
		needs.NeverBypasses = true
		needs.Past, _ = legacyIntOption(opts, "past_window")
		needs.Future, _ = legacyIntOption(opts, "future_window")
	}
	if p, _ := opts["profile"].(string); p == "frequencies" && opts["frequencies"] == nil {
		n, err := legacyWarmupBatches(opts)
		if err != nil {
			return cache.Needs{}, err
		}
		needs.ProfileBatches = n
	}
	return needs, nil
}

// legacyPolicyName is NAME for builtin:NAME, else the binary's base name
// without its flowrun-cache- prefix.
func legacyPolicyName(ref string) string {
	if name, ok := strings.CutPrefix(ref, "builtin:"); ok {
		return name
	}
	return strings.TrimPrefix(filepath.Base(ref), "flowrun-cache-")
}

// legacyWarmupBatches reads the static policy's warmup_batches (default
// 16, its first_batches default).
func legacyWarmupBatches(opts map[string]any) (int, error) {
	n, ok := legacyIntOption(opts, "warmup_batches")
	switch {
	case opts["warmup_batches"] == nil:
		n = 16
	case !ok:
		return 0, fmt.Errorf("cache.options.warmup_batches: want a whole number, got %v", opts["warmup_batches"])
	case n < 1:
		return 0, fmt.Errorf("cache.options.warmup_batches: must be ≥ 1, got %d", n)
	}
	return n, nil
}

// legacyIntOption reads a whole-number option of a plugin's options map.
func legacyIntOption(opts map[string]any, key string) (int, bool) {
	switch v := opts[key].(type) {
	case int:
		return v, true
	case int64:
		return int(v), true
	case float64:
		if v == math.Trunc(v) {
			return int(v), true
		}
	}
	return 0, false
}
