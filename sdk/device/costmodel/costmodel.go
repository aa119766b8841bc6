// Package costmodel is the analytic cost model of device plugins, public
// so that a device is its profile data plus a few lines (Spec and New):
// a device is one of its named profiles (Params: datasheet peaks, a link
// from Links, efficiency factors), or a profile the graph gives whole in
// its options (InlineProfile), and the modeled time of an operation is
//
//	Read, Write:  latency + bytes / (bandwidth · efficiency)
//	Transfer:     latency + bytes / (link · link_efficiency)
//	Compute:      flops / (gflops · compute_efficiency)
//
// where an op named in op_efficiency uses that efficiency instead, and an
// op named in op_overhead_ms costs that much more. With
// bandwidth in GB/s (1e9 bytes per second), bytes / GB/s is directly
// nanoseconds. Every figure this package returns is modeled time on the
// profiled hardware, never a measurement of the host flowrun runs on.
//
// The built-in devices (cpu-dram, hbm, nmp-dimm) differ only in their
// profiles; this package holds the plugin itself so they cannot drift
// apart. It imports only sdk/plugin and sdk/device, never framework/.
package costmodel

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Version is the version of every device built on this package.
const Version = "0.1.0"

// Spec is what distinguishes one device plugin from another.
type Spec struct {
	// Name is the plugin name (builtin:NAME).
	Name string
	// Description is the plugin's one-line Info description.
	Description string
	// Profiles are the named profiles the `profile` option selects, by
	// lower-case key.
	Profiles map[string]Params
	// Default is the key of the profile used without a `profile` option.
	Default string
}

// Device is a cost-modeled device plugin.
type Device struct {
	spec Spec

	mu         sync.Mutex
	configured bool
	params     Params
}

var _ device.Device = (*Device)(nil)

// New returns a device plugin for spec.
func New(spec Spec) *Device { return &Device{spec: spec} }

// Info describes the device and its options with their defaults.
func (d *Device) Info(context.Context) (plugin.Info, error) {
	return plugin.NewInfo(plugin.KindDevice, d.spec.Name, Version, d.spec.Description, fields(d.spec)), nil
}

// Configure decodes the options over the selected profile and validates
// the result.
func (d *Device) Configure(_ context.Context, setup plugin.Setup) error {
	var cfg Config
	if err := plugin.DecodeOptions(setup.Options, &cfg); err != nil {
		return err
	}
	if err := cfg.checkOptions(""); err != nil {
		return err
	}
	p, err := cfg.resolve(d.spec)
	if err != nil {
		return err
	}
	if err := Validate(p); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.params = p
	d.configured = true
	return nil
}

// Profile returns the configured profile. Its Efficiency is the memory
// efficiency; Params has the link's, the arithmetic's and the per-op ones.
func (d *Device) Profile(context.Context) (device.Profile, error) {
	p, err := d.current()
	return p.Profile, err
}

// Params returns the configured cost model in full, with op maps of its own.
func (d *Device) Params(context.Context) (Params, error) {
	p, err := d.current()
	return p.clone(), err
}

// current returns the configured cost model itself, for reading only:
// Configure replaces it whole and nothing writes into its op maps, so the
// per-batch Cost needs no copy of them.
func (d *Device) current() (Params, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.configured {
		return Params{}, plugin.ErrNotConfigured
	}
	return d.params, nil
}

// Cost returns the modeled nanoseconds of each op, in request order. One
// invalid op refuses the whole request.
func (d *Device) Cost(_ context.Context, req *device.CostRequest) (*device.CostResult, error) {
	p, err := d.current()
	if err != nil {
		return nil, err
	}
	return costs(p, req)
}

// costs is Cost over a request's ops, in request order: what a device
// answers, and what a host evaluating the model itself (Local) computes.
func costs(p Params, req *device.CostRequest) (*device.CostResult, error) {
	if req == nil {
		return nil, fmt.Errorf("%w: nil cost request", plugin.ErrInvalidRequest)
	}
	res := &device.CostResult{ModeledNs: make([]int64, len(req.Ops))}
	for i, op := range req.Ops {
		ns, err := Cost(p, op)
		if err != nil {
			return nil, fmt.Errorf("batch %d: op %d (%q): %w", req.Seq, i, op.Name, err)
		}
		res.ModeledNs[i] = ns
	}
	return res, nil
}

// Cost is the modeled time of op on a device with cost model p, in whole
// nanoseconds rounded up (so that any non-empty op costs at least 1 ns).
func Cost(p Params, op device.Op) (int64, error) {
	if op.Bytes < 0 || op.FLOPs < 0 {
		return 0, fmt.Errorf("%w: negative size (bytes %d, flops %d)", plugin.ErrInvalidRequest, op.Bytes, op.FLOPs)
	}
	var ns float64
	eff := p.efficiency(op)
	switch op.Kind {
	case device.Read, device.Write:
		ns = p.LatencyNs + float64(op.Bytes)/(p.BandwidthGBps*eff)
	case device.Transfer:
		if p.LinkGBps == 0 {
			return 0, fmt.Errorf("%w: transfer on %s, which has no link", plugin.ErrInvalidRequest, p.Name)
		}
		ns = p.LatencyNs + float64(op.Bytes)/(p.LinkGBps*eff)
	case device.Compute:
		if p.GFLOPS == 0 && op.FLOPs > 0 {
			return 0, fmt.Errorf("%w: compute on %s, which has no arithmetic", plugin.ErrInvalidRequest, p.Name)
		}
		if op.FLOPs > 0 {
			ns = float64(op.FLOPs) / (p.GFLOPS * eff)
		}
	default:
		return 0, fmt.Errorf("%w: unknown op kind %d", plugin.ErrInvalidRequest, op.Kind)
	}
	ns += p.OpOverheadMs[op.Name] * 1e6
	if ns >= math.MaxInt64 {
		return 0, fmt.Errorf("%w: modeled time overflows (%g ns)", plugin.ErrInvalidRequest, ns)
	}
	return int64(math.Ceil(ns)), nil
}
