package plankit

// golden is 2^64/φ, splitmix64's increment.
const golden = 0x9E3779B97F4A7C15

// MixHash maps row to one of n buckets (n ≥ 1) so that rows differing in
// any bit land apart, whatever their order:
//
//	splitmix64(uint64(row) + seed·0x9E3779B97F4A7C15) mod n
//
// where splitmix64(x) adds 0x9E3779B97F4A7C15 and applies the finalizer
// (x ^= x>>30; x *= 0xBF58476D1CE4E5B9; x ^= x>>27; x *= 0x94D049BB133111EB;
// x ^= x>>31), all modulo 2^64 (Steele, Lea and Flood's SplitMix64). The
// policies whose papers leave the hash open (HECA's dynamic part, the
// mixed-precision cache's sets) offer it beside row mod n.
func MixHash(seed uint64, row int64, n int) int {
	x := uint64(row) + seed*golden + golden
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	x ^= x >> 31
	return int(x % uint64(n))
}
