package mpcache

import (
	"fmt"
	"math"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/plankit"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Replacement priorities (the paper's PV, Sec. 3 "Cache Replacement
// Policy").
const (
	// LFU ranks rows by an access count that every embedding row carries
	// (Appendix A: an INT32 per row), kept across evictions.
	LFU = "lfu"
	// LRU ranks rows by the clock of their latest update, kept only while
	// they are resident.
	LRU = "lru"
)

// LRU clocks: what one tick of LRU's timestamp is.
const (
	// ClockBatch stamps a row with the batch's plan sequence, so that a
	// newcomer never displaces a row updated in the same batch (PV[i] ≤
	// PV[j] bypasses).
	ClockBatch = "batch"
	// ClockUpdate stamps each update with its own tick, so that a newcomer
	// always displaces the set's least recently updated row.
	ClockUpdate = "update"
)

// MaxWays is the paper's widest associativity (32, the GPU's warp).
const MaxWays = 32

// Config is the mpcache policy's options.
type Config struct {
	// Options are what the host fills: capacity (slots per table, from
	// cache.size, capped at the table's rows) and the windows, which the
	// policy ignores (it holds none: sequential graphs only).
	cache.Options
	// Ways is α, the rows per set: a power of two from 1 (direct-mapped)
	// to 32.
	Ways int `json:"ways"`
	// Replacement is lfu (the default) or lru.
	Replacement string `json:"replacement"`
	// LRUClock is batch (the default) or update; only with lru.
	LRUClock string `json:"lru_clock"`
	// Fraction, when > 0, sizes each table's cache as the paper does, from
	// its own rows: n = max(1, ⌊fraction·rows/α⌋) sets, capped at the
	// capacity. 0 sizes it from the capacity alone.
	Fraction float64 `json:"fraction"`
	// PerTable, instead of Fraction, takes the fraction from the host:
	// capacity over the largest table's rows, which is cache.size when
	// that is a share (the host's capacity is that share of the largest
	// table). So cache.size: 0.05 caches 5 % of every table, and a sweep
	// over cache.size alone sweeps the paper's cache sizes.
	PerTable bool `json:"per_table"`
	// Hash maps a row to its set: mod (row mod n, the default) or mix.
	Hash string `json:"hash"`
	// HashSeed seeds mix.
	HashSeed uint64 `json:"hash_seed"`
	// MinRows: a table of at most this many rows gets no cache (every
	// lookup bypasses); the paper caches only tables over 1K rows.
	MinRows int64 `json:"min_rows"`
}

func defaultConfig() Config {
	return Config{Ways: MaxWays, Replacement: LFU, LRUClock: ClockBatch, Hash: HashMod}
}

// Validate checks the options, joining every error.
func (c Config) Validate() error {
	var errs plugin.FieldErrors
	plankit.CheckHost(c.Options, &errs)
	if c.Ways < 1 || c.Ways > MaxWays || c.Ways&(c.Ways-1) != 0 {
		errs.Add("ways", "must be a power of two from 1 to %d, got %d", MaxWays, c.Ways)
	}
	if c.Replacement != LFU && c.Replacement != LRU {
		errs.Add("replacement", "must be %s or %s, got %q", LFU, LRU, c.Replacement)
	}
	if c.LRUClock != ClockBatch && c.LRUClock != ClockUpdate {
		errs.Add("lru_clock", "must be %s or %s, got %q", ClockBatch, ClockUpdate, c.LRUClock)
	}
	if !(c.Fraction >= 0 && c.Fraction <= 1) {
		errs.Add("fraction", "must be in [0, 1] (0: size from capacity), got %g", c.Fraction)
	}
	if c.PerTable && c.Fraction > 0 {
		errs.Add("per_table", "given with fraction %g: size the tables by one of them", c.Fraction)
	}
	if c.Hash != HashMod && c.Hash != HashMix {
		errs.Add("hash", "must be %s or %s, got %q", HashMod, HashMix, c.Hash)
	}
	if c.MinRows < 0 {
		errs.Add("min_rows", "must be ≥ 0, got %d", c.MinRows)
	}
	return errs.Err()
}

// fraction is the share of its rows each table caches under the options,
// for tables whose largest has maxRows rows; 0: size from the capacity.
func (c Config) fraction(maxRows int64) float64 {
	if c.PerTable && maxRows > 0 {
		return min(1, float64(c.Capacity)/float64(maxRows))
	}
	return c.Fraction
}

// geometries builds each of setup's tables from its sets and ways under
// the options (geometry), as Configure and Needs both size them.
func geometries[T any](c Config, setup plugin.Setup, build func(t, sets, ways int) T) ([]T, error) {
	var maxRows int64
	for _, tab := range setup.Tables {
		maxRows = max(maxRows, tab.Rows)
	}
	f := c.fraction(maxRows)
	return plankit.PerTable(c.Capacity, setup.Tables, func(t int, slots int32) T {
		sets, ways := c.geometry(setup.Tables[t].Rows, slots, f)
		return build(t, sets, ways)
	})
}

// geometry is one table's sets and ways, caching the share f of its rows
// (0: as many slots as it has). A table whose slots are fewer than α is
// one set of that many ways; a table of at most MinRows rows, or with no
// slots, has no sets.
func (c Config) geometry(rows int64, slots int32, f float64) (sets, ways int) {
	if rows <= c.MinRows || slots < 1 {
		return 0, 0
	}
	n := int64(slots)
	if f > 0 {
		want := int64(math.Floor(f * float64(rows) / float64(c.Ways)))
		n = min(n, max(1, want)*int64(c.Ways))
	}
	ways = min(c.Ways, int(n))
	return int(n) / ways, ways
}

func fields() []plugin.Field {
	return []plugin.Field{
		plankit.CapacityField,
		{Name: "ways", Type: "int", Default: fmt.Sprint(MaxWays), Description: "α, rows per set: a power of two from 1 (direct-mapped) to 32"},
		{Name: "replacement", Type: "string", Default: LFU, Description: "the priority PV: lfu (an access count per row, kept across evictions) or lru (the latest update's clock)"},
		{Name: "lru_clock", Type: "string", Default: ClockBatch, Description: "lru's clock: batch (the plan's sequence: a row updated in the same batch is not displaced) or update (one tick per update)"},
		{Name: "fraction", Type: "float", Default: "0", Description: "> 0: each table gets max(1, ⌊fraction·rows/α⌋) sets of its own rows, capped at capacity; 0: capacity/α sets"},
		{Name: "per_table", Type: "bool", Default: "false", Description: "the fraction is capacity / the largest table's rows (cache.size when it is a share): every table caches that share of its own rows"},
		{Name: "hash", Type: "string", Default: HashMod, Description: "the set of row i: mod (i mod n) or mix (splitmix64(i + hash_seed·φ) mod n)"},
		{Name: "hash_seed", Type: "uint", Default: "0", Description: "seed of mix"},
		{Name: "min_rows", Type: "int", Default: "0", Description: "tables of at most this many rows get no cache (the paper: 1000)"},
		plankit.IgnoredWindow("past"), plankit.IgnoredWindow("future"),
	}
}
