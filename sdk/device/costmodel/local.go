package costmodel

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// CostModel hands over the configured cost model (device.ModelDescriber):
// Cost is Cost(Params, op) for each op, so a host holding these Params
// computes the same nanoseconds. JSON keeps every float64 exact.
func (d *Device) CostModel(context.Context) ([]byte, error) {
	p, err := d.current()
	if err != nil {
		return nil, err
	}
	return json.Marshal(p)
}

var _ device.ModelDescriber = (*Device)(nil)

// Local is a device whose Cost the host evaluates itself when the device
// hands over its cost model (device.ModelDescriber), asked once after each
// Configure; otherwise every Cost goes to the device. For a device in
// another process this turns a round trip per stage per batch into
// arithmetic, with the same figures.
type Local struct {
	device.Device
	mu     sync.Mutex
	params *Params
}

// NewLocal wraps d.
func NewLocal(d device.Device) *Local { return &Local{Device: d} }

// Configure configures the device, then takes its cost model if it hands
// one over.
func (l *Local) Configure(ctx context.Context, setup plugin.Setup) error {
	if err := l.Device.Configure(ctx, setup); err != nil {
		return err
	}
	var p *Params
	if md, ok := l.Device.(device.ModelDescriber); ok {
		if js, err := md.CostModel(ctx); err == nil {
			var got Params
			if err := json.Unmarshal(js, &got); err != nil {
				return fmt.Errorf("device cost model: %w", err)
			}
			if err := Validate(got); err != nil {
				return fmt.Errorf("device cost model: %w", err)
			}
			p = &got
		}
	}
	l.mu.Lock()
	l.params = p
	l.mu.Unlock()
	return nil
}

// Evaluates reports whether Cost runs here (the device handed over its
// model at the last Configure).
func (l *Local) Evaluates() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.params != nil
}

// Cost evaluates the cost model here when the device handed it over, else
// asks the device.
func (l *Local) Cost(ctx context.Context, req *device.CostRequest) (*device.CostResult, error) {
	l.mu.Lock()
	p := l.params
	l.mu.Unlock()
	if p == nil {
		return l.Device.Cost(ctx, req)
	}
	return costs(*p, req)
}
