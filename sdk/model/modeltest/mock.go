package modeltest

import (
	"context"

	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Mock is a model.Model whose methods call the function fields, for tests
// of code that uses models. A nil batch-call field returns
// plugin.ErrUnsupported.
type Mock struct {
	InfoF      func(ctx context.Context) (plugin.Info, error)
	ConfigureF func(ctx context.Context, setup plugin.Setup) error
	StepF      func(ctx context.Context, req *model.StepRequest) (*model.StepResult, error)
	DigestF    func(ctx context.Context) ([]byte, error)
}

var _ model.Model = (*Mock)(nil)

func (m *Mock) Info(ctx context.Context) (plugin.Info, error) {
	if m.InfoF == nil {
		return plugin.Info{Kind: plugin.KindModel, Name: "mock"}, nil
	}
	return m.InfoF(ctx)
}

func (m *Mock) Configure(ctx context.Context, setup plugin.Setup) error {
	if m.ConfigureF == nil {
		return nil
	}
	return m.ConfigureF(ctx, setup)
}

func (m *Mock) Step(ctx context.Context, req *model.StepRequest) (*model.StepResult, error) {
	if m.StepF == nil {
		return nil, plugin.ErrUnsupported
	}
	return m.StepF(ctx, req)
}

func (m *Mock) Digest(ctx context.Context) ([]byte, error) {
	if m.DigestF == nil {
		return nil, plugin.ErrUnsupported
	}
	return m.DigestF(ctx)
}
