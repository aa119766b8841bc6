package rpaccel

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strings"

	"github.com/flowrun/flowrun/sdk/device/costmodel"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Config is the device's options: a named profile (`rpaccel`, `centaur`)
// whose figures any key below overrides. Every figure's source is in the
// README's option table and in docs/devices.md.
type Config struct {
	// Profile is "rpaccel" (Table 3 with RPAccel's mechanisms) or
	// "centaur" (the paper's baseline: one monolithic array, a static
	// cache only, top-k on the host).
	Profile string `json:"profile"`
	// Arrays is the number of sub-arrays of each stage of the pipeline,
	// frontend first: RPAccel(8,2) is [8, 2]; [1] is a monolithic
	// single-stage array.
	Arrays []int `json:"arrays"`
	// Shares is each stage's fraction of the MAC units (default: equal).
	Shares []float64 `json:"shares"`
	// Stage is the stage (index into Arrays) this device prices.
	Stage int `json:"stage"`

	// The figures: Table 3's resources, Sec. 6.2's caches and top-k unit,
	// the link, and the fitted gather efficiency. fields() (Info) and the
	// README give each one's unit and source.
	ClockMHz          float64  `json:"clock_mhz"`
	MACs              int      `json:"macs"`
	SRAMBytes         int64    `json:"sram_bytes"`
	StaticBytes       int64    `json:"static_bytes"`
	LookaheadBytes    int64    `json:"lookahead_bytes"`
	LineBytes         int64    `json:"line_bytes"`
	Prefetch          *bool    `json:"prefetch"`
	DRAMBytes         int64    `json:"dram_bytes"`
	DRAMGBps          float64  `json:"dram_gbps"`
	DRAMLatencyCycles float64  `json:"dram_latency_cycles"`
	GatherEfficiency  float64  `json:"gather_efficiency"`
	WeightBytes       int64    `json:"weight_bytes"`
	TopK              string   `json:"topk"`
	TopKDrainCycles   float64  `json:"topk_drain_cycles"`
	HostGHz           float64  `json:"host_ghz"`
	Link              string   `json:"link"`
	LinkLatencyUs     float64  `json:"link_latency_us"`
	OnChipOps         []string `json:"on_chip_ops"`
	ProfileBatches    int      `json:"profile_batches"`
	Utilization       float64  `json:"utilization"`
	// VectorDim is the embedding dim of the stage's model when it is not
	// the run's tables' (a RecPipe frontend's named model: RMsmall's 4
	// beside RMlarge's 32); 0 takes each table's dim from the run. The
	// caches and the gather move vectors at this size.
	VectorDim int `json:"vector_dim"`
	// ChargePrefetch adds to a gather's cost the DRAM time of the rows
	// the look-ahead cache prefetched for it (PrefetchNs): for a device
	// that stands for the chip's gather unit on a later stage, which
	// fetches them while the previous stage runs. Off: the stage's own
	// view, the rows already on chip.
	ChargePrefetch bool `json:"charge_prefetch"`
}

// Table 3 of RecPipe (Gupta et al., MICRO'21): RPAccel's fixed resources.
const (
	ClockMHz          = 250
	ArrayDim          = 128 // 128×128 MACs
	SRAMBytes         = 8 << 20
	CacheBytes        = 16 << 20 // embedding caches in all
	DRAMBytes         = 16 << 30
	DRAMGBps          = 64
	DRAMLatencyCycles = 100
)

// Sec. 6.2 of RecPipe: the embedding cache's split and line, the top-k
// unit's drain.
const (
	// LookaheadBytes: "we conservatively provision 4MB for the look-ahead
	// cache. This leaves 12MB for the static embedding cache."
	LookaheadBytes = 4 << 20
	StaticBytes    = CacheBytes - LookaheadBytes
	// LineBytes: "a 128 byte cache line size, the embedding vector size
	// of RMlarge".
	LineBytes = 128
	// TopKDrainCycles: identifying and sending the ids of the highest bins
	// "takes a couple hundred accelerator cycles".
	TopKDrainCycles = 200
	// HostGHz is the clock of the host that filters on the baseline: the
	// Cascade Lake CPU of Table 2, 2.8 GHz.
	HostGHz = 2.8
)

// GatherEfficiency is the share of DRAM bandwidth the embedding gather's
// random vector reads sustain, fitted on the baseline's 6 ms p99 at 200
// QPS (docs/devices.md, rpaccel "Calibration"; TestCalibration refits
// it). The paper gives none.
const GatherEfficiency = 0.035

// LinkLatencyUs is the fixed cost of one host↔accelerator PCIe transfer.
// The paper uses "real measurements from the CPU-GPU system" without
// quoting them; 10 µs is the order of a small pinned cudaMemcpy on PCIe
// gen3 (flowrun's reading, not fitted).
const LinkLatencyUs = 10

// defaults is the named profile's configuration.
func defaults(profile string) (Config, bool) {
	c := Config{
		Profile: profile, Arrays: []int{8, 8}, ClockMHz: ClockMHz, MACs: ArrayDim * ArrayDim,
		SRAMBytes: SRAMBytes, StaticBytes: StaticBytes, LookaheadBytes: LookaheadBytes, LineBytes: LineBytes,
		DRAMBytes: DRAMBytes, DRAMGBps: DRAMGBps, DRAMLatencyCycles: DRAMLatencyCycles, GatherEfficiency: GatherEfficiency,
		WeightBytes: 4, TopK: "unit", TopKDrainCycles: TopKDrainCycles, HostGHz: HostGHz,
		Link: "pcie3", LinkLatencyUs: LinkLatencyUs, OnChipOps: []string{"pooled-to-device"}, ProfileBatches: 16,
	}
	switch profile {
	case "rpaccel":
	case "centaur":
		// Centaur (the paper's baseline, Sec. 7.1): one TPU-like
		// monolithic array, all 16 MB a static hot-embedding cache, the
		// host filters the top-k.
		c.Arrays, c.StaticBytes, c.LookaheadBytes, c.TopK = []int{1}, CacheBytes, 0, "host"
	default:
		return Config{}, false
	}
	return c, true
}

// Profiles are the named profiles.
var Profiles = []string{"centaur", "rpaccel"}

// DefaultProfile is the profile without a `profile` option.
const DefaultProfile = "rpaccel"

// decode reads the options over the named profile's defaults.
func decode(raw json.RawMessage) (Config, error) {
	var pick struct {
		Profile *string `json:"profile"`
	}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &pick) // DecodeOptions below reports malformed options
	}
	name := DefaultProfile
	if pick.Profile != nil {
		name = strings.ToLower(strings.TrimSpace(*pick.Profile))
	}
	c, ok := defaults(name)
	if !ok {
		return Config{}, plugin.FieldErrorf("profile", "unknown profile %q (allowed: %s)", name, strings.Join(Profiles, ", "))
	}
	if err := plugin.DecodeOptions(raw, &c); err != nil {
		return Config{}, err
	}
	c.Profile = name
	return c, c.validate()
}

// validate reports every problem with c at once.
func (c Config) validate() error {
	var errs []error
	bad := func(key, format string, args ...any) { errs = append(errs, plugin.FieldErrorf(key, format, args...)) }
	if len(c.Arrays) == 0 || slices.ContainsFunc(c.Arrays, func(n int) bool { return n < 1 }) {
		bad("arrays", "must list ≥ 1 sub-arrays per stage, got %v", c.Arrays)
	}
	if c.Stage < 0 || c.Stage >= len(c.Arrays) {
		bad("stage", "must index arrays (0 to %d), got %d", len(c.Arrays)-1, c.Stage)
	}
	if c.Shares != nil {
		sum := 0.0
		for _, s := range c.Shares {
			sum += s
		}
		if len(c.Shares) != len(c.Arrays) || slices.ContainsFunc(c.Shares, func(s float64) bool { return !(s > 0) }) || sum > 1+1e-9 {
			bad("shares", "must give each stage of arrays a fraction > 0, summing to ≤ 1, got %v", c.Shares)
		}
	}
	positive := map[string]float64{"clock_mhz": c.ClockMHz, "macs": float64(c.MACs), "sram_bytes": float64(c.SRAMBytes),
		"line_bytes": float64(c.LineBytes), "dram_bytes": float64(c.DRAMBytes), "dram_gbps": c.DRAMGBps,
		"weight_bytes": float64(c.WeightBytes), "host_ghz": c.HostGHz, "profile_batches": float64(c.ProfileBatches)}
	nonNegative := map[string]float64{"static_bytes": float64(c.StaticBytes), "lookahead_bytes": float64(c.LookaheadBytes),
		"dram_latency_cycles": c.DRAMLatencyCycles, "topk_drain_cycles": c.TopKDrainCycles, "link_latency_us": c.LinkLatencyUs}
	for _, key := range slices.Sorted(maps.Keys(positive)) {
		if !(positive[key] > 0) {
			bad(key, "must be > 0, got %v", positive[key])
		}
	}
	for _, key := range slices.Sorted(maps.Keys(nonNegative)) {
		if !(nonNegative[key] >= 0) {
			bad(key, "must be ≥ 0, got %v", nonNegative[key])
		}
	}
	if c.TopK != "unit" && c.TopK != "host" {
		bad("topk", "must be unit (on-chip bucketed filter) or host, got %q", c.TopK)
	}
	if _, ok := costmodel.Links[c.Link]; !ok {
		bad("link", "unknown link %q (allowed: %s)", c.Link, strings.Join(costmodel.LinkNames(), ", "))
	}
	if !(c.GatherEfficiency > 0 && c.GatherEfficiency <= 1) {
		bad("gather_efficiency", "must be in (0, 1], got %v", c.GatherEfficiency)
	}
	if c.VectorDim < 0 {
		bad("vector_dim", "must be ≥ 0 (0: the run's tables' dim), got %d", c.VectorDim)
	}
	if !(c.Utilization >= 0 && c.Utilization <= 1) {
		bad("utilization", "must be in [0, 1] (0: the paper's 0.3 monolithic, 0.6 split), got %v", c.Utilization)
	}
	if len(errs) == 0 {
		for stage := range c.Arrays {
			s := c
			s.Stage = stage
			if r, col := s.subArray(); r*col < 64 {
				bad("arrays", "stage %d's sub-arrays would have %d MACs, fewer than the paper's smallest 8×8", stage, r*col)
			}
		}
	}
	return errors.Join(errs...)
}

// share is the stage's fraction of the MAC units and of the static cache.
func (c Config) share() float64 {
	if c.Shares != nil {
		return c.Shares[c.Stage]
	}
	return 1 / float64(len(c.Arrays))
}

// subArray is the shape (rows R, columns C) of each of the stage's
// sub-arrays: the stage's MACs (its share of the array) split equally
// among its sub-arrays, as square as powers of two allow: R the largest
// power of two with R² ≤ the sub-array's MACs, C the MACs over R. The
// paper names the counts (Sec. 7.1: "the frontend is fixed with [8]
// sub-arrays while the backend implements two ... eight ... and sixteen
// sub-arrays", "iso-hardware resources") but not the shapes: an equal
// split of 128×128 gives RPAccel(8,8) 32×32 arrays, (8,2)'s backend two
// 64×64 and (8,16)'s sixteen 16×32.
func (c Config) subArray() (rows, cols int) {
	macs := int(float64(c.MACs) * c.share() / float64(c.Arrays[c.Stage]))
	if macs < 1 {
		return 0, 0
	}
	rows = 1 << ((bits.Len(uint(macs)) - 1) / 2)
	return rows, macs / rows
}

// String names the design as the paper does: RPAccel(8,2), Centaur.
func (c Config) String() string {
	if c.Profile == "centaur" {
		return "Centaur-like baseline"
	}
	parts := make([]string, len(c.Arrays))
	for i, n := range c.Arrays {
		parts[i] = fmt.Sprint(n)
	}
	return "RPAccel(" + strings.Join(parts, ",") + ")"
}
