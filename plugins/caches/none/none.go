// Package none is the "no cache" baseline of ScratchPipe (Sec. V) and Tensor
// Casting: every lookup misses and bypasses the cache, so every row is read
// from and written back to its home memory each batch. It is the reference
// point for hit rates and speedups, and it must end a run with the same
// model digest as every exact cache policy.
//
// It imports only sdk/ and the built-in plugins' internal helpers.
package none

import (
	"context"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/plankit"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Name is the policy's plugin name (builtin:none).
const Name = "none"

// Version is this plugin's version.
const Version = "0.1.0"

type policy struct {
	plankit.Guard
	tables int
}

// New returns the no-cache policy.
func New() cache.Cache { return &policy{} }

func (p *policy) Info(context.Context) (plugin.Info, error) {
	return plankit.Info(Name, Version,
		"no cache: every lookup misses and bypasses (slot -1); the baseline every policy is compared with",
		fields()), nil
}

// Needs declares that the policy holds every window: it never evicts. It
// checks the options as Configure does.
func (p *policy) Needs(_ context.Context, setup plugin.Setup) (cache.Needs, error) {
	if err := plankit.Decode(setup, &Config{}); err != nil {
		return cache.Needs{}, err
	}
	return cache.Needs{HoldsWindows: true}, nil
}

func (p *policy) Configure(_ context.Context, setup plugin.Setup) error {
	var cfg Config
	if err := plankit.Decode(setup, &cfg); err != nil {
		return err
	}
	p.Guard.Configure(setup.Tables, func() { p.tables = len(setup.Tables) })
	return nil
}

func (p *policy) Plan(_ context.Context, req *cache.PlanRequest) (*cache.PlanResult, error) {
	return p.Guard.Plan(Name, req, func(b *cache.Batch) (*cache.PlanResult, error) {
		res := &cache.PlanResult{Tables: make([]cache.TableStats, p.tables)}
		for t := range p.tables {
			lo, hi := b.Table(t)
			for i := lo; i < hi; i++ {
				b.Slots[i] = -1
				b.Hits[i] = 0
			}
			res.Tables[t].Misses = hi - lo
		}
		return res, nil
	})
}
