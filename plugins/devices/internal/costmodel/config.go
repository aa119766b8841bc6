package costmodel

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Config is a device's options: each one, when present, overrides the
// matching field of the device's default profile. Pointers tell "absent"
// from zero, so that overriding a figure can be recorded in the profile's
// Source.
type Config struct {
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
	// Efficiency scales every peak figure to a sustained one, in (0, 1].
	Efficiency *float64 `json:"efficiency"`
	// Source replaces the citation of the profile's figures.
	Source *string `json:"source"`
}

// apply returns p with c's overrides, and the option names it overrode
// (other than name and source) in a fixed order.
func (c Config) apply(p device.Profile) (device.Profile, []string) {
	var changed []string
	setF := func(dst *float64, v *float64, key string) {
		if v != nil {
			*dst = *v
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
	switch {
	case c.Source != nil:
		p.Source = *c.Source
	case len(changed) > 0:
		// Keep the citation honest: these figures are no longer the cited
		// part's alone.
		p.Source += "; overridden by options: " + strings.Join(changed, ", ")
	}
	return p, changed
}

// Validate checks a profile and joins every problem found. A device must
// have memory bandwidth; a link and arithmetic are optional (0: the device
// has none, and ops that need them are refused).
func Validate(p device.Profile) error {
	var errs []error
	bad := func(key, msg string, v any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s, got %v", plugin.ErrInvalidConfig, key, msg, v))
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
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
	if !(p.Efficiency > 0 && p.Efficiency <= 1) {
		bad("efficiency", "must be in (0, 1]", p.Efficiency)
	}
	return errors.Join(errs...)
}

// fields documents Config for Info, with the defaults of profile p.
func fields(p device.Profile) []plugin.Field {
	f := func(v float64) string { return fmt.Sprint(v) }
	return []plugin.Field{
		{Name: "name", Type: "string", Default: p.Name, Description: "display name of the profile"},
		{Name: "capacity_bytes", Type: "int", Default: fmt.Sprint(p.CapacityBytes), Description: "memory the device offers, bytes (0: unlimited)"},
		{Name: "bandwidth_gbps", Type: "float", Default: f(p.BandwidthGBps), Description: "peak memory bandwidth, GB/s (1e9 B/s); prices Read and Write"},
		{Name: "link_gbps", Type: "float", Default: f(p.LinkGBps), Description: "bandwidth of the link into the device, GB/s; prices Transfer (0: no link)"},
		{Name: "latency_ns", Type: "float", Default: f(p.LatencyNs), Description: "fixed modeled cost of each Read, Write or Transfer, ns"},
		{Name: "gflops", Type: "float", Default: f(p.GFLOPS), Description: "peak FP32 throughput, GFLOP/s; prices Compute (0: no arithmetic)"},
		{Name: "efficiency", Type: "float", Default: f(p.Efficiency), Description: "fraction of every peak figure sustained, in (0, 1]"},
		{Name: "source", Type: "string", Default: p.Source, Description: "citation for the figures (noted automatically when figures are overridden)"},
	}
}
