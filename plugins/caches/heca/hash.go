package heca

import "github.com/flowrun/flowrun/sdk/cache/plankit"

// The hash functions of the dynamic part (HECA leaves hash() unspecified).
const (
	// HashMix64 is splitmix64's finalizer over key + seed·φ: keys that
	// differ in any bit land apart, whatever their order.
	HashMix64 = "mix64"
	// HashIdentity is key mod size: consecutive keys take consecutive
	// slots and key, key+size, key+2·size collide, which tests use to
	// build probe chains by hand.
	HashIdentity = "identity"
)

// Hash is the first probe index of key in a dynamic part of size slots
// (size ≥ 1): Algorithm 1's line 2, index ← hash(key).
//
//	mix64:    splitmix64(uint64(key) + seed·0x9E3779B97F4A7C15) mod size
//	identity: uint64(key) mod size
//
// where plankit.MixHash is splitmix64, which adds 0x9E3779B97F4A7C15 and applies the finalizer
// (x ^= x>>30; x *= 0xBF58476D1CE4E5B9; x ^= x>>27; x *= 0x94D049BB133111EB;
// x ^= x>>31), all modulo 2^64. Keys are row IDs, never negative.
func Hash(kind string, seed uint64, key int64, size int) int {
	if kind == HashMix64 {
		return plankit.MixHash(seed, key, size)
	}
	return int(uint64(key) % uint64(size))
}
