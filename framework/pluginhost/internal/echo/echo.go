// Package echo is a tiny cache plugin for the host's tests: it reports the
// span context it was called with, and fails in the ways a test asks for.
package echo

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// CursedSeq is the batch sequence number Plan refuses with
// plugin.ErrInvalidRequest.
const CursedSeq = 666

// Options are echo's options.
type Options struct {
	Capacity int64 `json:"capacity"`
	// PanicOnPlan makes Plan panic, which kills the plugin process.
	PanicOnPlan bool `json:"panic_on_plan"`
}

type echo struct {
	mu   sync.Mutex
	opts *Options
}

// New returns an echo cache.
func New() cache.Cache { return &echo{} }

// Info describes the plugin; Description carries the caller's span context
// as "trace=<id> span=<id>".
func (e *echo) Info(ctx context.Context) (plugin.Info, error) {
	sc := trace.SpanContextFromContext(ctx)
	return plugin.Info{
		Kind:        plugin.KindCache,
		Name:        "echo",
		Version:     "0.0.1",
		Description: fmt.Sprintf("trace=%s span=%s", sc.TraceID(), sc.SpanID()),
	}, nil
}

func (e *echo) Configure(_ context.Context, setup plugin.Setup) error {
	var opts Options
	if err := plugin.DecodeOptions(setup.Options, &opts); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.opts = &opts
	return nil
}

// Plan bypasses every ID without looking at the regions.
func (e *echo) Plan(_ context.Context, req *cache.PlanRequest) (*cache.PlanResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.opts == nil:
		return nil, plugin.ErrNotConfigured
	case e.opts.PanicOnPlan:
		panic("echo: panicking as asked")
	case req.Seq == CursedSeq:
		return nil, fmt.Errorf("echo: batch %d is cursed: %w", req.Seq, plugin.ErrInvalidRequest)
	}
	res := &cache.PlanResult{}
	for t := 1; t < len(req.TableOffsets); t++ {
		res.Tables = append(res.Tables, cache.TableStats{Misses: req.TableOffsets[t] - req.TableOffsets[t-1]})
	}
	return res, nil
}
