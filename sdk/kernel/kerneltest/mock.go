package kerneltest

import (
	"context"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Mock is a kernel.Kernel whose methods call the function fields, for tests
// of code that uses kernels. A nil batch-call field returns
// plugin.ErrUnsupported.
type Mock struct {
	InfoF           func(ctx context.Context) (plugin.Info, error)
	ConfigureF      func(ctx context.Context, setup plugin.Setup) error
	GatherReduceF   func(ctx context.Context, req *kernel.GatherReduceRequest) (*kernel.Result, error)
	ScatterF        func(ctx context.Context, req *kernel.ScatterRequest) (*kernel.Result, error)
	ExpandCoalesceF func(ctx context.Context, req *kernel.ExpandCoalesceRequest) (*kernel.CoalesceResult, error)
	ApplyF          func(ctx context.Context, req *kernel.ApplyRequest) (*kernel.Result, error)
}

var _ kernel.Kernel = (*Mock)(nil)

func (m *Mock) Info(ctx context.Context) (plugin.Info, error) {
	if m.InfoF == nil {
		return plugin.Info{Kind: plugin.KindKernel, Name: "mock"}, nil
	}
	return m.InfoF(ctx)
}

func (m *Mock) Configure(ctx context.Context, setup plugin.Setup) error {
	if m.ConfigureF == nil {
		return nil
	}
	return m.ConfigureF(ctx, setup)
}

func (m *Mock) GatherReduce(ctx context.Context, req *kernel.GatherReduceRequest) (*kernel.Result, error) {
	if m.GatherReduceF == nil {
		return nil, plugin.ErrUnsupported
	}
	return m.GatherReduceF(ctx, req)
}

func (m *Mock) Scatter(ctx context.Context, req *kernel.ScatterRequest) (*kernel.Result, error) {
	if m.ScatterF == nil {
		return nil, plugin.ErrUnsupported
	}
	return m.ScatterF(ctx, req)
}

func (m *Mock) ExpandCoalesce(ctx context.Context, req *kernel.ExpandCoalesceRequest) (*kernel.CoalesceResult, error) {
	if m.ExpandCoalesceF == nil {
		return nil, plugin.ErrUnsupported
	}
	return m.ExpandCoalesceF(ctx, req)
}

func (m *Mock) Apply(ctx context.Context, req *kernel.ApplyRequest) (*kernel.Result, error) {
	if m.ApplyF == nil {
		return nil, plugin.ErrUnsupported
	}
	return m.ApplyF(ctx, req)
}
