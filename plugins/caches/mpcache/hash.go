package mpcache

import "github.com/flowrun/flowrun/sdk/cache/plankit"

// The set hash h (the paper leaves it open: "explore different hash
// functions" is future work).
const (
	// HashMod is i mod n: consecutive rows take consecutive sets.
	HashMod = "mod"
	// HashMix is splitmix64's finalizer over i + seed·φ, mod n: rows
	// that differ in any bit land apart, whatever their order.
	HashMix = "mix"
)

// Hash is the set of row in a cache of sets sets (sets ≥ 1):
//
//	mod: uint64(row) mod sets
//	mix: splitmix64(uint64(row) + seed·0x9E3779B97F4A7C15) mod sets
//
// where plankit.MixHash is splitmix64, which adds 0x9E3779B97F4A7C15 and applies the finalizer
// (x ^= x>>30; x *= 0xBF58476D1CE4E5B9; x ^= x>>27; x *= 0x94D049BB133111EB;
// x ^= x>>31), all modulo 2^64. Rows are never negative.
func Hash(kind string, seed uint64, row int64, sets int) int {
	if kind == HashMix {
		return plankit.MixHash(seed, row, sets)
	}
	return int(uint64(row) % uint64(sets))
}
