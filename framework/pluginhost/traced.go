package pluginhost

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/device/costmodel"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// spans starts one span per plugin call, named "<kind>/<name>.<Method>".
type spans struct {
	tracer trace.Tracer
	prefix string // "<kind>/<name>."
	kind   trace.SpanKind
	attrs  []attribute.KeyValue
}

// traced runs one plugin call f inside a span named after method, with
// attrs; done, if not nil, adds attributes from a successful call's result
// (which it must check for nil); an error is recorded on the span.
func traced[R any](ctx context.Context, s *spans, method string, f func(context.Context) (R, error), done func(trace.Span, R), attrs ...attribute.KeyValue) (R, error) {
	ctx, span := s.tracer.Start(ctx, s.prefix+method,
		trace.WithSpanKind(s.kind),
		trace.WithAttributes(s.attrs...),
		trace.WithAttributes(attrs...))
	defer span.End()
	res, err := f(ctx)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	} else if done != nil {
		done(span, res)
	}
	return res, err
}

func seq(n uint64) attribute.KeyValue { return attribute.Int64("flowrun.batch.seq", int64(n)) }

// tracedBase traces the two calls every plugin has.
type tracedBase struct {
	base plugin.Base
	tr   *spans
}

func (b tracedBase) Info(ctx context.Context) (plugin.Info, error) {
	return traced(ctx, b.tr, "Info", b.base.Info, nil)
}

func (b tracedBase) Configure(ctx context.Context, setup plugin.Setup) error {
	_, err := traced(ctx, b.tr, "Configure", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, b.base.Configure(ctx, setup)
	}, nil, attribute.String("flowrun.run_id", setup.RunID))
	return err
}

type tracedCache struct {
	tracedBase
	impl cache.Cache
}

func (c *tracedCache) Plan(ctx context.Context, req *cache.PlanRequest) (*cache.PlanResult, error) {
	return traced(ctx, c.tr, "Plan", func(ctx context.Context) (*cache.PlanResult, error) { return c.impl.Plan(ctx, req) },
		func(span trace.Span, res *cache.PlanResult) {
			if res == nil {
				return
			}
			var st cache.TableStats
			for _, t := range res.Tables {
				st.Hits += t.Hits
				st.Misses += t.Misses
				st.Evictions += t.Evictions
			}
			span.SetAttributes(
				attribute.Int64("flowrun.cache.hits", st.Hits),
				attribute.Int64("flowrun.cache.misses", st.Misses),
				attribute.Int64("flowrun.cache.evictions", st.Evictions))
		}, seq(req.Seq))
}

// tracedDeclarer is a traced cache whose policy declares its Needs
// (cache.Declarer).
type tracedDeclarer struct {
	*tracedCache
	declarer cache.Declarer
}

func (c *tracedDeclarer) Needs(ctx context.Context, setup plugin.Setup) (cache.Needs, error) {
	return traced(ctx, c.tr, "Needs", func(ctx context.Context) (cache.Needs, error) { return c.declarer.Needs(ctx, setup) }, nil)
}

type tracedKernel struct {
	tracedBase
	impl kernel.Kernel
}

func (k *tracedKernel) GatherReduce(ctx context.Context, req *kernel.GatherReduceRequest) (*kernel.Result, error) {
	return traced(ctx, k.tr, "GatherReduce", func(ctx context.Context) (*kernel.Result, error) { return k.impl.GatherReduce(ctx, req) }, kernelResult)
}

func (k *tracedKernel) Scatter(ctx context.Context, req *kernel.ScatterRequest) (*kernel.Result, error) {
	return traced(ctx, k.tr, "Scatter", func(ctx context.Context) (*kernel.Result, error) { return k.impl.Scatter(ctx, req) }, kernelResult)
}

func (k *tracedKernel) ExpandCoalesce(ctx context.Context, req *kernel.ExpandCoalesceRequest) (*kernel.CoalesceResult, error) {
	return traced(ctx, k.tr, "ExpandCoalesce", func(ctx context.Context) (*kernel.CoalesceResult, error) { return k.impl.ExpandCoalesce(ctx, req) },
		func(span trace.Span, res *kernel.CoalesceResult) {
			if res != nil {
				kernelResult(span, &res.Result)
			}
		})
}

func (k *tracedKernel) Apply(ctx context.Context, req *kernel.ApplyRequest) (*kernel.Result, error) {
	return traced(ctx, k.tr, "Apply", func(ctx context.Context) (*kernel.Result, error) { return k.impl.Apply(ctx, req) }, kernelResult)
}

// Quantize and Dequantize pass the optional kernel.Quantizer on, as the
// gRPC client does: a kernel without it answers plugin.ErrUnsupported.
func (k *tracedKernel) Quantize(ctx context.Context, req *kernel.ConvertRequest) (*kernel.Result, error) {
	return traced(ctx, k.tr, "Quantize", func(ctx context.Context) (*kernel.Result, error) {
		q, ok := k.impl.(kernel.Quantizer)
		if !ok {
			return nil, fmt.Errorf("%w: %s", plugin.ErrUnsupported, kernel.OpQuantize)
		}
		return q.Quantize(ctx, req)
	}, kernelResult)
}

func (k *tracedKernel) Dequantize(ctx context.Context, req *kernel.ConvertRequest) (*kernel.Result, error) {
	return traced(ctx, k.tr, "Dequantize", func(ctx context.Context) (*kernel.Result, error) {
		q, ok := k.impl.(kernel.Quantizer)
		if !ok {
			return nil, fmt.Errorf("%w: %s", plugin.ErrUnsupported, kernel.OpDequantize)
		}
		return q.Dequantize(ctx, req)
	}, kernelResult)
}

func kernelResult(span trace.Span, res *kernel.Result) {
	if res == nil {
		return
	}
	span.SetAttributes(
		attribute.Int64("flowrun.bytes_read", res.BytesRead),
		attribute.Int64("flowrun.bytes_written", res.BytesWritten),
		attribute.Int64("flowrun.flops", res.FLOPs))
}

type tracedModel struct {
	tracedBase
	impl model.Model
}

func (m *tracedModel) Step(ctx context.Context, req *model.StepRequest) (*model.StepResult, error) {
	return traced(ctx, m.tr, "Step", func(ctx context.Context) (*model.StepResult, error) { return m.impl.Step(ctx, req) },
		func(span trace.Span, res *model.StepResult) {
			if res == nil {
				return
			}
			span.SetAttributes(attribute.Float64("flowrun.model.loss", res.Loss), attribute.Int64("flowrun.flops", res.FLOPs))
		}, seq(req.Seq), attribute.Bool("flowrun.model.train", req.Train))
}

func (m *tracedModel) Digest(ctx context.Context) ([]byte, error) {
	return traced(ctx, m.tr, "Digest", m.impl.Digest, nil)
}

type tracedDevice struct {
	tracedBase
	impl *costmodel.Local
}

func (d *tracedDevice) Profile(ctx context.Context) (device.Profile, error) {
	return traced(ctx, d.tr, "Profile", d.impl.Profile, nil)
}

// Cost is a traced plugin call unless the host evaluates the device's
// cost model itself, which is arithmetic here and no call at all.
func (d *tracedDevice) Cost(ctx context.Context, req *device.CostRequest) (*device.CostResult, error) {
	if d.impl.Evaluates() {
		return d.impl.Cost(ctx, req)
	}
	return traced(ctx, d.tr, "Cost", func(ctx context.Context) (*device.CostResult, error) { return d.impl.Cost(ctx, req) },
		nil, seq(req.Seq), attribute.Int("flowrun.device.ops", len(req.Ops)))
}
