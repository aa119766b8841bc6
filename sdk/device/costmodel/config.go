package costmodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// Figures are the cost model's parameters as options: each one present
// sets the matching figure of Params. Pointers tell "absent" from zero, so
// that overriding a figure can be recorded in the profile's Source. The
// keys and units are those of docs/devices.md.
type Figures struct {
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
	// Servers is how many queries the device serves at once (cores each
	// running one process, independent sub-arrays); 0 or 1: one.
	Servers *int32 `json:"servers"`
	// Source replaces the citation of the profile's figures.
	Source *string `json:"source"`
}

// InlineProfile is a whole profile given in the graph's options instead
// of a name (`profile: {name: ..., bandwidth_gbps: ..., ...}`): the
// figures of Figures and the link into the device. name, bandwidth_gbps
// and efficiency are required; every other figure defaults to 0 (no link,
// no latency, no arithmetic, no capacity limit), and source to a note that
// the figures come from the graph, not from a cited part.
type InlineProfile struct {
	// Link names the link into the device, a key of Links; it sets
	// link_gbps and link_efficiency unless those are given too.
	Link *string `json:"link"`
	Figures
}

// Config is a device's options. `profile` picks a named profile (the
// device's default without it) or gives one whole (InlineProfile), `link`
// the link into the device, `peak` drops every efficiency factor to 1;
// then each figure present overrides the matching one of the profile.
type Config struct {
	// Profile names one of the device's profiles (Spec.Profiles), or is a
	// mapping with a whole profile (InlineProfile).
	Profile json.RawMessage `json:"profile"`
	// Link names the link into the device, a key of Links (pcie3, pcie4,
	// pcie5); it sets link_gbps and link_efficiency.
	Link *string `json:"link"`
	// Peak prices every op at the datasheet figures: all efficiency
	// factors 1 (an explicit efficiency option still applies).
	Peak *bool `json:"peak"`
	Figures
}

// UserSource is the Source of an inline profile that gives none.
const UserSource = "user-defined profile in the graph's options (figures not from a cited part)"

// Params returns the named profile key as a device configured with
// `profile: key` and no other option prices ops: its link applied.
func (s Spec) Params(key string) (Params, error) {
	raw, err := json.Marshal(key)
	if err != nil {
		return Params{}, err
	}
	return Config{Profile: raw}.resolve(s)
}

// Validate checks that the default profile exists and that every named
// profile is a valid cost model, naming the profile of each problem: a
// device's unit test calls it on its Spec.
func (s Spec) Validate() error {
	var errs []error
	if _, ok := s.Profiles[s.Default]; !ok {
		errs = append(errs, fmt.Errorf("%s: default profile %q is not among its profiles", s.Name, s.Default))
	}
	for _, key := range slices.Sorted(maps.Keys(s.Profiles)) {
		p, err := s.Params(key)
		if err == nil {
			err = Validate(p)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: profile %q: %w", s.Name, key, err))
		}
	}
	return errors.Join(errs...)
}

// resolve builds the Params the options describe over spec's profiles,
// and reports every problem with the options at once.
func (c Config) resolve(spec Spec) (Params, error) {
	var link *string
	if c.Link != nil {
		l := strings.ToLower(strings.TrimSpace(*c.Link))
		if _, ok := Links[l]; !ok {
			return Params{}, plugin.FieldErrorf("link", "unknown link %q (allowed: %s)", l, strings.Join(LinkNames(), ", "))
		}
		link = &l
	}
	p, err := c.base(spec, link)
	if err != nil {
		return Params{}, err
	}
	if c.Peak != nil && *c.Peak {
		p = p.peak()
	}
	return c.apply(p), nil
}

// base is the profile the options start from, with op maps of its own
// and its link applied: the named one (spec's default without a `profile`
// option), or the inline one. link, the `link` option, replaces the
// profile's link.
func (c Config) base(spec Spec, link *string) (Params, error) {
	raw := bytes.TrimSpace(c.Profile)
	key := spec.Default
	switch {
	case len(raw) == 0 || string(raw) == "null":
	case raw[0] == '"':
		if err := json.Unmarshal(raw, &key); err != nil {
			return Params{}, plugin.FieldErrorf("profile", "%v", err)
		}
		key = strings.ToLower(strings.TrimSpace(key))
	case raw[0] == '{':
		var ip InlineProfile
		if err := decodeStrict(raw, &ip); err != nil {
			return Params{}, err
		}
		if link != nil {
			ip.Link = link
		}
		// Its own link_gbps and link_efficiency stay over the link's.
		return ip.Params()
	default:
		return Params{}, plugin.FieldErrorf("profile", "must be a profile name or a mapping with a whole profile, got %s", raw)
	}
	p, ok := spec.Profiles[key]
	if !ok {
		return Params{}, plugin.FieldErrorf("profile", "unknown profile %q (%s has: %s)",
			key, spec.Name, strings.Join(slices.Sorted(maps.Keys(spec.Profiles)), ", "))
	}
	p = p.clone()
	if link != nil {
		p.Link = *link
	}
	if p.Link != "" {
		p = p.withLink(p.Link)
	}
	return p, nil
}

// decodeStrict decodes an inline profile, naming an unknown or mistyped
// key by its path ("profile::bandwidth_gbps").
func decodeStrict(raw []byte, ip *InlineProfile) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return plugin.FieldErrorf("profile", "%v", err)
	}
	known := inlineKeys()
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !slices.Contains(known, k) {
			errs = append(errs, plugin.FieldErrorf("profile::"+k, "unknown key (allowed: %s)", strings.Join(known, ", ")))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := json.Unmarshal(raw, ip); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			// Go names the field by its path, the embedded Figures included.
			field := strings.ReplaceAll(strings.TrimPrefix(te.Field, "Figures."), ".", "::")
			return plugin.FieldErrorf("profile::"+field, "must be %s, got %s", te.Type, te.Value)
		}
		return plugin.FieldErrorf("profile", "%v", err)
	}
	return nil
}

// inlineKeys are the keys of InlineProfile, sorted.
func inlineKeys() []string {
	raw, _ := json.Marshal(InlineProfile{})
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return slices.Sorted(maps.Keys(m))
}

// Params is the cost model an inline profile describes, validated with
// every problem named by its key under "profile::".
func (ip InlineProfile) Params() (Params, error) {
	var errs []error
	for key, missing := range map[string]bool{"name": ip.Name == nil, "bandwidth_gbps": ip.BandwidthGBps == nil, "efficiency": ip.Efficiency == nil} {
		if missing {
			errs = append(errs, plugin.FieldErrorf("profile::"+key, "required in an inline profile"))
		}
	}
	var p Params
	if ip.Link != nil {
		link := strings.ToLower(strings.TrimSpace(*ip.Link))
		if _, ok := Links[link]; !ok {
			errs = append(errs, plugin.FieldErrorf("profile::link", "unknown link %q (allowed: %s)", link, strings.Join(LinkNames(), ", ")))
		} else {
			p.Link = link
		}
	}
	errs = append(errs, ip.checkOptions("profile::"))
	if err := errors.Join(errs...); err != nil {
		return Params{}, sortErrors(err)
	}
	p.Name, p.Source = *ip.Name, UserSource
	if ip.Source != nil {
		p.Source = *ip.Source
	}
	if p.Link != "" {
		p = p.withLink(p.Link)
	}
	// The profile's own figures, not overrides: nothing to note in Source;
	// its name and source are set above, before the link's are appended.
	f := ip.Figures
	f.Name, f.Source = nil, nil
	p, _ = f.set(p)
	if err := validate(p, "profile::"); err != nil {
		return Params{}, err
	}
	return p, nil
}

// sortErrors orders joined errors by message, so that a map's iteration
// order never shows.
func sortErrors(err error) error {
	// The top level only: a FieldError unwraps to several errors too.
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return err
	}
	errs := slices.Clone(j.Unwrap())
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

// apply returns p with c's figure overrides. Overriding a figure (name and
// source aside) is noted in the Source, naming the options in a fixed order.
func (c Config) apply(p Params) Params {
	p, changed := c.Figures.set(p)
	switch {
	case c.Source != nil:
	case len(changed) > 0:
		// Keep the citation honest: these figures are no longer the cited
		// part's alone.
		p.Source += "; overridden by options: " + strings.Join(changed, ", ")
	}
	return p
}

// set returns p with f's figures, and the keys of those it changed (name
// and source aside) in a fixed order. p's op maps are its own (resolve
// cloned them), so the catalogue is never written.
func (f Figures) set(p Params) (Params, []string) {
	var changed []string
	setF := func(dst *float64, v *float64, key string) {
		if v != nil {
			*dst = *v
			changed = append(changed, key)
		}
	}
	mergeOps := func(dst *map[string]float64, v map[string]float64, key string) {
		if len(v) > 0 {
			if *dst == nil {
				*dst = map[string]float64{}
			}
			maps.Copy(*dst, v)
			changed = append(changed, key)
		}
	}
	if f.Name != nil {
		p.Name = *f.Name
	}
	if f.CapacityBytes != nil {
		p.CapacityBytes = *f.CapacityBytes
		changed = append(changed, "capacity_bytes")
	}
	setF(&p.BandwidthGBps, f.BandwidthGBps, "bandwidth_gbps")
	setF(&p.LinkGBps, f.LinkGBps, "link_gbps")
	setF(&p.LatencyNs, f.LatencyNs, "latency_ns")
	setF(&p.GFLOPS, f.GFLOPS, "gflops")
	setF(&p.Efficiency, f.Efficiency, "efficiency")
	setF(&p.LinkEfficiency, f.LinkEfficiency, "link_efficiency")
	setF(&p.ComputeEfficiency, f.ComputeEfficiency, "compute_efficiency")
	if f.Servers != nil {
		p.Servers = *f.Servers
		changed = append(changed, "servers")
	}
	mergeOps(&p.OpEfficiency, f.OpEfficiency, "op_efficiency")
	mergeOps(&p.OpOverheadMs, f.OpOverheadMs, "op_overhead_ms")
	if f.Source != nil {
		p.Source = *f.Source
	}
	return p, changed
}

// Validate checks a cost model and joins every problem found, each a
// plugin.FieldError naming the option. A device must have memory
// bandwidth; a link and arithmetic are optional (0: the device has none,
// and ops that need them are refused).
func Validate(p Params) error { return validate(p, "") }

// validate is Validate with the options' keys under prefix ("profile::"
// for an inline profile).
func validate(p Params, prefix string) error {
	var errs []error
	bad := func(key, msg string, v any) {
		errs = append(errs, plugin.FieldErrorf(prefix+key, "%s, got %v", msg, v))
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
	if p.Servers < 0 {
		bad("servers", "must be ≥ 0", p.Servers)
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
func (f Figures) checkOptions(prefix string) error {
	var errs []error
	for key, v := range map[string]*float64{"link_efficiency": f.LinkEfficiency, "compute_efficiency": f.ComputeEfficiency} {
		if v != nil && !(*v > 0 && *v <= 1) {
			errs = append(errs, plugin.FieldErrorf(prefix+key, "must be in (0, 1], got %v", *v))
		}
	}
	return sortErrors(errors.Join(errs...))
}

// fields documents Config for Info, with the defaults of the device's
// default profile.
func fields(spec Spec) []plugin.Field {
	p, _ := Config{}.resolve(spec) // the default profile always resolves
	f := formatFloat
	eff := func(v float64) string {
		if v == 0 {
			return "as efficiency"
		}
		return f(v)
	}
	return []plugin.Field{
		{Name: "profile", Type: "string or map", Default: spec.Default, Description: "named profile: " + strings.Join(slices.Sorted(maps.Keys(spec.Profiles)), ", ") + "; or a mapping with a whole profile of your own (name, bandwidth_gbps and efficiency required; the keys below and link) (docs/devices.md)"},
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
		{Name: "servers", Type: "int", Default: fmt.Sprint(p.Servers), Description: "queries the device serves at once (CPU cores each running one process, accelerator sub-arrays), for a serving model's multi-server queue; 0 or 1: one"},
		{Name: "source", Type: "string", Default: p.Source, Description: "citation for the figures (noted automatically when figures are overridden)"},
	}
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
