package devicetest

import (
	"context"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Mock is a device.Device whose methods call the function fields, for tests
// of code that uses devices. A nil ProfileF or CostF returns
// plugin.ErrUnsupported.
type Mock struct {
	InfoF      func(ctx context.Context) (plugin.Info, error)
	ConfigureF func(ctx context.Context, setup plugin.Setup) error
	ProfileF   func(ctx context.Context) (device.Profile, error)
	CostF      func(ctx context.Context, req *device.CostRequest) (*device.CostResult, error)
}

var _ device.Device = (*Mock)(nil)

func (m *Mock) Info(ctx context.Context) (plugin.Info, error) {
	if m.InfoF == nil {
		return plugin.Info{Kind: plugin.KindDevice, Name: "mock"}, nil
	}
	return m.InfoF(ctx)
}

func (m *Mock) Configure(ctx context.Context, setup plugin.Setup) error {
	if m.ConfigureF == nil {
		return nil
	}
	return m.ConfigureF(ctx, setup)
}

func (m *Mock) Profile(ctx context.Context) (device.Profile, error) {
	if m.ProfileF == nil {
		return device.Profile{}, plugin.ErrUnsupported
	}
	return m.ProfileF(ctx)
}

func (m *Mock) Cost(ctx context.Context, req *device.CostRequest) (*device.CostResult, error) {
	if m.CostF == nil {
		return nil, plugin.ErrUnsupported
	}
	return m.CostF(ctx, req)
}
