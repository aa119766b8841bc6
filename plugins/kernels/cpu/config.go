package cpu

import (
	"fmt"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Config is the CPU kernel's options.
type Config struct {
	// Workers bounds how many tables are processed at once. 0 means the
	// CPUs available (plugin.Parallelism); 1 runs the tables one after another. The result does not
	// depend on it: each table is computed by one goroutine in a fixed
	// order.
	Workers int `json:"workers"`
	// Impl picks the gather-reduce and coalescing loops: "auto" (the
	// default: AVX2 assembly where the CPU has it, else pure Go), "avx2"
	// (refused on a CPU without it) or "go". All give the same bits.
	Impl string `json:"impl"`
	// Prefetch is how many lookups ahead the AVX2 gather-reduce prefetches
	// rows (0 turns prefetching off); nil means 12. A tuning knob: the
	// result does not depend on it.
	Prefetch *int `json:"prefetch"`
}

// Validate checks the options.
func (c Config) Validate() error {
	if c.Workers < 0 {
		return fmt.Errorf("%w: workers: must be ≥ 0, got %d", plugin.ErrInvalidConfig, c.Workers)
	}
	if c.Prefetch != nil && (*c.Prefetch < 0 || *c.Prefetch > 1024) {
		return fmt.Errorf("%w: prefetch: must be in [0, 1024], got %d", plugin.ErrInvalidConfig, *c.Prefetch)
	}
	switch c.Impl {
	case "", ImplAuto, ImplGo:
	case ImplAVX2:
		if !haveAVX2 {
			return fmt.Errorf("%w: impl: this CPU has no AVX2 (use %q or %q)", plugin.ErrInvalidConfig, ImplAuto, ImplGo)
		}
	default:
		return fmt.Errorf("%w: impl: want %q, %q or %q, got %q", plugin.ErrInvalidConfig, ImplAuto, ImplAVX2, ImplGo, c.Impl)
	}
	return nil
}

// Impl values.
const (
	ImplAuto = "auto"
	ImplAVX2 = "avx2"
	ImplGo   = "go"
)

// avx2 reports whether the configured loops are the AVX2 ones.
func (c Config) avx2() bool { return c.Impl != ImplGo && haveAVX2 }

func (c Config) pooler() pooler {
	if !c.avx2() {
		return poolGo
	}
	if c.Prefetch == nil {
		return poolAVX2
	}
	ahead := int64(*c.Prefetch)
	return func(v *tableView, reduce kernel.Reduce) { poolAVX2Ahead(v, reduce, ahead) }
}

func (c Config) coalescer() bagPooler {
	if c.avx2() {
		return coalesceAVX2
	}
	return coalesceGo
}

func (c Config) workers() int {
	if c.Workers == 0 {
		return plugin.Parallelism()
	}
	return c.Workers
}

func fields() []plugin.Field {
	return []plugin.Field{{
		Name:        "workers",
		Type:        "int",
		Default:     "0",
		Description: "tables processed in parallel (0: the CPUs available, at most GOMAXPROCS); results are identical for any value",
	}, {
		Name:        "impl",
		Type:        "string",
		Default:     ImplAuto,
		Description: "gather-reduce and coalescing loops: auto (AVX2 where available), avx2, go; results are identical",
	}, {
		Name:        "prefetch",
		Type:        "int",
		Default:     "12",
		Description: "lookups ahead the AVX2 gather-reduce prefetches rows (0: off); results are identical",
	}}
}
