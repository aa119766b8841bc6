package costmodel

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// Config is a device's options. `profile` picks a named profile (the
// device's default without it), `link` the link into the device, `peak`
// drops every efficiency factor to 1; then each figure present overrides
// the matching one of the profile. Pointers tell "absent" from zero, so
// that overriding a figure can be recorded in the profile's Source.
type Config struct {
	// Profile names one of the device's profiles (Spec.Profiles).
	Profile *string `json:"profile"`
	// Link names the link into the device, a key of Links (pcie3, pcie4,
	// pcie5); it sets link_gbps and link_efficiency.
	Link *string `json:"link"`
	// Peak prices every op at the datasheet figures: all efficiency
	// factors 1 (an explicit efficiency option still applies).
	Peak *bool `json:"peak"`
	// Name is the profile's display name.
	Name *string `json:"name"`
	// CapacityBytes is the memory the device offers (0: unlimited).
	CapacityBytes *int64 `json:"capacity_bytes"`
	// BandwidthGBps is peak memory bandwidth in GB/s (1e9 bytes/s).
	BandwidthGBps *float64 `json:"bandwidth_gbps"`
	// LinkGBps is the bandwidth of the link into the device, GB/s.
	LinkGBps *float64 `json:"link_gbps"`
	// LatencyNs is the fixed cost of each read, write or transfer.
	LatencyNs *float64 `json:"latency_ns"`
	// GFLOPS is peak arithmetic throughput.
	GFLOPS *float64 `json:"gflops"`
	// Efficiency is the sustained fraction of peak memory bandwidth, in
	// (0, 1], and of the link and arithmetic where those have none.
	Efficiency *float64 `json:"efficiency"`
	// LinkEfficiency is the sustained fraction of link_gbps, in (0, 1].
	LinkEfficiency *float64 `json:"link_efficiency"`
	// ComputeEfficiency is the sustained fraction of gflops, in (0, 1].
	ComputeEfficiency *float64 `json:"compute_efficiency"`
	// OpEfficiency sets the efficiency of the ops of a given name,
	// merged over the profile's (e.g. {scatter: 0.05}).
	OpEfficiency map[string]float64 `json:"op_efficiency"`
	// OpOverheadMs sets the fixed modeled ms added to the ops of a given
	// name, merged over the profile's (e.g. {train-step: 0}).
	OpOverheadMs map[string]float64 `json:"op_overhead_ms"`
	// Source replaces the citation of the profile's figures.
	Source *string `json:"source"`
}

// resolve builds the Params the options describe over spec's profiles,
// and reports every problem with the options at once.
func (c Config) resolve(spec Spec) (Params, error) {
	key := spec.Default
	if c.Profile != nil {
		key = strings.ToLower(strings.TrimSpace(*c.Profile))
	}
	base, ok := spec.Profiles[key]
	if !ok {
		return Params{}, fmt.Errorf("%w: profile: unknown profile %q (%s has: %s)", plugin.ErrInvalidConfig,
			key, spec.Name, strings.Join(slices.Sorted(maps.Keys(spec.Profiles)), ", "))
	}
	p := base.clone()
	link := p.Link
	if c.Link != nil {
		link = strings.ToLower(strings.TrimSpace(*c.Link))
		if _, ok := Links[link]; !ok {
			return Params{}, fmt.Errorf("%w: link: unknown link %q (allowed: %s)", plugin.ErrInvalidConfig, link, strings.Join(LinkNames(), ", "))
		}
	}
	if link != "" {
		p = p.withLink(link)
	}
	if c.Peak != nil && *c.Peak {
		p = p.peak()
	}
	return c.apply(p), nil
}

// apply returns p with c's figure overrides. Overriding a figure (name and
// source aside) is noted in the Source, naming the options in a fixed order.
func (c Config) apply(p Params) Params {
	var changed []string
	setF := func(dst *float64, v *float64, key string) {
		if v != nil {
			*dst = *v
			changed = append(changed, key)
		}
	}
	// mergeOps merges an op map over the profile's; p's maps are its own
	// (resolve cloned them), so the catalogue is never written.
	mergeOps := func(dst *map[string]float64, v map[string]float64, key string) {
		if len(v) > 0 {
			if *dst == nil {
				*dst = map[string]float64{}
			}
			maps.Copy(*dst, v)
			changed = append(changed, key)
		}
	}
	if c.Name != nil {
		p.Name = *c.Name
	}
	if c.CapacityBytes != nil {
		p.CapacityBytes = *c.CapacityBytes
		changed = append(changed, "capacity_bytes")
	}
	setF(&p.BandwidthGBps, c.BandwidthGBps, "bandwidth_gbps")
	setF(&p.LinkGBps, c.LinkGBps, "link_gbps")
	setF(&p.LatencyNs, c.LatencyNs, "latency_ns")
	setF(&p.GFLOPS, c.GFLOPS, "gflops")
	setF(&p.Efficiency, c.Efficiency, "efficiency")
	setF(&p.LinkEfficiency, c.LinkEfficiency, "link_efficiency")
	setF(&p.ComputeEfficiency, c.ComputeEfficiency, "compute_efficiency")
	mergeOps(&p.OpEfficiency, c.OpEfficiency, "op_efficiency")
	mergeOps(&p.OpOverheadMs, c.OpOverheadMs, "op_overhead_ms")
	switch {
	case c.Source != nil:
		p.Source = *c.Source
	case len(changed) > 0:
		// Keep the citation honest: these figures are no longer the cited
		// part's alone.
		p.Source += "; overridden by options: " + strings.Join(changed, ", ")
	}
	return p
}

// Validate checks a cost model and joins every problem found. A device
// must have memory bandwidth; a link and arithmetic are optional (0: the
// device has none, and ops that need them are refused).
func Validate(p Params) error {
	var errs []error
	bad := func(key, msg string, v any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s, got %v", plugin.ErrInvalidConfig, key, msg, v))
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	fraction := func(v float64) bool { return v > 0 && v <= 1 }
	if strings.TrimSpace(p.Name) == "" {
		bad("name", "must not be empty", fmt.Sprintf("%q", p.Name))
	}
	if p.CapacityBytes < 0 {
		bad("capacity_bytes", "must be ≥ 0", p.CapacityBytes)
	}
	if !(p.BandwidthGBps > 0) || !finite(p.BandwidthGBps) {
		bad("bandwidth_gbps", "must be > 0", p.BandwidthGBps)
	}
	if !(p.LinkGBps >= 0) || !finite(p.LinkGBps) {
		bad("link_gbps", "must be ≥ 0", p.LinkGBps)
	}
	if !(p.LatencyNs >= 0) || !finite(p.LatencyNs) {
		bad("latency_ns", "must be ≥ 0", p.LatencyNs)
	}
	if !(p.GFLOPS >= 0) || !finite(p.GFLOPS) {
		bad("gflops", "must be ≥ 0", p.GFLOPS)
	}
	if !fraction(p.Efficiency) {
		bad("efficiency", "must be in (0, 1]", p.Efficiency)
	}
	// 0 means "as efficiency" in Params; an option can only set (0, 1].
	if p.LinkEfficiency != 0 && !fraction(p.LinkEfficiency) {
		bad("link_efficiency", "must be in (0, 1]", p.LinkEfficiency)
	}
	if p.ComputeEfficiency != 0 && !fraction(p.ComputeEfficiency) {
		bad("compute_efficiency", "must be in (0, 1]", p.ComputeEfficiency)
	}
	// ops checks an op map: named ops, each value ok (else msg).
	ops := func(key string, m map[string]float64, ok func(float64) bool, msg string) {
		for _, name := range slices.Sorted(maps.Keys(m)) {
			if strings.TrimSpace(name) == "" {
				bad(key, "op names must not be empty", fmt.Sprintf("%q", name))
			}
			if v := m[name]; !ok(v) {
				bad(key+"::"+name, msg, v)
			}
		}
	}
	ops("op_efficiency", p.OpEfficiency, fraction, "must be in (0, 1]")
	ops("op_overhead_ms", p.OpOverheadMs, func(v float64) bool { return v >= 0 && finite(v) }, "must be ≥ 0")
	return errors.Join(errs...)
}

// checkOptions rejects options that Validate cannot see once applied: an
// explicit 0 for an efficiency that Params reads as "inherit".
func (c Config) checkOptions() error {
	var errs []error
	for key, v := range map[string]*float64{"link_efficiency": c.LinkEfficiency, "compute_efficiency": c.ComputeEfficiency} {
		if v != nil && !(*v > 0 && *v <= 1) {
			errs = append(errs, fmt.Errorf("%w: %s: must be in (0, 1], got %v", plugin.ErrInvalidConfig, key, *v))
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

// fields documents Config for Info, with the defaults of the device's
// default profile.
func fields(spec Spec) []plugin.Field {
	p, _ := Config{}.resolve(spec)
	f := formatFloat
	eff := func(v float64) string {
		if v == 0 {
			return "as efficiency"
		}
		return f(v)
	}
	return []plugin.Field{
		{Name: "profile", Type: "string", Default: spec.Default, Description: "named profile: " + strings.Join(slices.Sorted(maps.Keys(spec.Profiles)), ", ") + " (docs/devices.md)"},
		{Name: "link", Type: "string", Default: p.Link, Description: "link into the device: " + strings.Join(LinkNames(), ", ") + "; sets link_gbps and link_efficiency"},
		{Name: "peak", Type: "bool", Default: "false", Description: "price every op at the datasheet peaks: every efficiency factor 1 (explicit efficiency options still apply)"},
		{Name: "name", Type: "string", Default: p.Name, Description: "display name of the profile"},
		{Name: "capacity_bytes", Type: "int", Default: fmt.Sprint(p.CapacityBytes), Description: "memory the device offers, bytes (0: unlimited)"},
		{Name: "bandwidth_gbps", Type: "float", Default: f(p.BandwidthGBps), Description: "peak memory bandwidth, GB/s (1e9 B/s); prices Read and Write"},
		{Name: "link_gbps", Type: "float", Default: f(p.LinkGBps), Description: "bandwidth of the link into the device, GB/s per direction; prices Transfer (0: no link)"},
		{Name: "latency_ns", Type: "float", Default: f(p.LatencyNs), Description: "fixed modeled cost of each Read, Write or Transfer, ns"},
		{Name: "gflops", Type: "float", Default: f(p.GFLOPS), Description: "peak FP32 throughput, GFLOP/s; prices Compute (0: no arithmetic)"},
		{Name: "efficiency", Type: "float", Default: f(p.Efficiency), Description: "sustained fraction of peak memory bandwidth (and of link and arithmetic where those have none), in (0, 1]"},
		{Name: "link_efficiency", Type: "float", Default: eff(p.LinkEfficiency), Description: "sustained fraction of link_gbps, in (0, 1]"},
		{Name: "compute_efficiency", Type: "float", Default: eff(p.ComputeEfficiency), Description: "sustained fraction of gflops, in (0, 1]"},
		{Name: "op_efficiency", Type: "map", Default: describeOps(p.OpEfficiency), Description: "efficiency of the ops of a given name (scatter, gather-reduce, ...), merged over the profile's, in (0, 1]"},
		{Name: "op_overhead_ms", Type: "map", Default: describeOps(p.OpOverheadMs), Description: "fixed modeled ms added to the ops of a given name (train-step: the training framework's per-step dispatch), merged over the profile's, ≥ 0"},
		{Name: "source", Type: "string", Default: p.Source, Description: "citation for the figures (noted automatically when figures are overridden)"},
	}
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
