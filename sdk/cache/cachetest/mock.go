package cachetest

import (
	"context"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Mock is a cache.Cache whose methods call the function fields, for tests
// of code that uses caches. A nil field returns zero values (and, for Plan,
// plugin.ErrUnsupported).
type Mock struct {
	InfoF      func(ctx context.Context) (plugin.Info, error)
	ConfigureF func(ctx context.Context, setup plugin.Setup) error
	PlanF      func(ctx context.Context, req *cache.PlanRequest) (*cache.PlanResult, error)
}

var _ cache.Cache = (*Mock)(nil)

func (m *Mock) Info(ctx context.Context) (plugin.Info, error) {
	if m.InfoF == nil {
		return plugin.Info{Kind: plugin.KindCache, Name: "mock"}, nil
	}
	return m.InfoF(ctx)
}

func (m *Mock) Configure(ctx context.Context, setup plugin.Setup) error {
	if m.ConfigureF == nil {
		return nil
	}
	return m.ConfigureF(ctx, setup)
}

func (m *Mock) Plan(ctx context.Context, req *cache.PlanRequest) (*cache.PlanResult, error) {
	if m.PlanF == nil {
		return nil, plugin.ErrUnsupported
	}
	return m.PlanF(ctx, req)
}
