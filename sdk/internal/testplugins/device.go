package testplugins

import (
	"context"
	"fmt"
	"math"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Linear is a device whose cost is a fixed latency plus bytes over
// sustained bandwidth (or FLOPs over sustained throughput).
type Linear struct {
	profile device.Profile
}

// NewLinear returns a device with a made-up DRAM-like profile.
func NewLinear() *Linear {
	return &Linear{profile: device.Profile{
		Name:          "test-linear",
		CapacityBytes: 64 << 30,
		BandwidthGBps: 76.8,
		LinkGBps:      16,
		LatencyNs:     100,
		GFLOPS:        1000,
		Efficiency:    0.8,
		Source:        "made up for the SDK's tests",
	}}
}

func (d *Linear) Info(context.Context) (plugin.Info, error) {
	return plugin.Info{Name: "test-linear", Version: "0.1.0", Description: "reference linear cost model"}, nil
}

func (d *Linear) Configure(_ context.Context, setup plugin.Setup) error {
	return plugin.DecodeOptions(setup.Options, &struct{}{})
}

func (d *Linear) Profile(context.Context) (device.Profile, error) { return d.profile, nil }

func (d *Linear) Cost(_ context.Context, req *device.CostRequest) (*device.CostResult, error) {
	p := d.profile
	out := &device.CostResult{ModeledNs: make([]int64, len(req.Ops))}
	for i, op := range req.Ops {
		if op.Bytes < 0 || op.FLOPs < 0 {
			return nil, fmt.Errorf("%w: op %d (%s): negative size", plugin.ErrInvalidRequest, i, op.Name)
		}
		var ns float64
		switch op.Kind {
		case device.Read, device.Write:
			ns = float64(op.Bytes) / (p.BandwidthGBps * p.Efficiency)
		case device.Transfer:
			ns = float64(op.Bytes) / (p.LinkGBps * p.Efficiency)
		case device.Compute:
			ns = float64(op.FLOPs) / (p.GFLOPS * p.Efficiency)
		default:
			return nil, fmt.Errorf("%w: op %d (%s): unknown kind %d", plugin.ErrInvalidRequest, i, op.Name, op.Kind)
		}
		out.ModeledNs[i] = int64(math.Ceil(p.LatencyNs + ns))
	}
	return out, nil
}
