package pluginhost

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/device"
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

func (s *spans) start(ctx context.Context, method string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return s.tracer.Start(ctx, s.prefix+method,
		trace.WithSpanKind(s.kind),
		trace.WithAttributes(s.attrs...),
		trace.WithAttributes(attrs...))
}

// end records err on span, if any, and ends it.
func end(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

func seq(n uint64) attribute.KeyValue { return attribute.Int64("flowrun.batch.seq", int64(n)) }

func traceInfo(ctx context.Context, s *spans, b plugin.Base) (plugin.Info, error) {
	ctx, span := s.start(ctx, "Info")
	i, err := b.Info(ctx)
	end(span, err)
	return i, err
}

func traceConfigure(ctx context.Context, s *spans, b plugin.Base, setup plugin.Setup) error {
	ctx, span := s.start(ctx, "Configure", attribute.String("flowrun.run_id", setup.RunID))
	err := b.Configure(ctx, setup)
	end(span, err)
	return err
}

type tracedCache struct {
	impl cache.Cache
	tr   *spans
}

func (c *tracedCache) Info(ctx context.Context) (plugin.Info, error) {
	return traceInfo(ctx, c.tr, c.impl)
}
func (c *tracedCache) Configure(ctx context.Context, s plugin.Setup) error {
	return traceConfigure(ctx, c.tr, c.impl, s)
}

func (c *tracedCache) Plan(ctx context.Context, req *cache.PlanRequest) (*cache.PlanResult, error) {
	ctx, span := c.tr.start(ctx, "Plan", seq(req.Seq))
	res, err := c.impl.Plan(ctx, req)
	if res != nil {
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
	}
	end(span, err)
	return res, err
}

type tracedKernel struct {
	impl kernel.Kernel
	tr   *spans
}

func (k *tracedKernel) Info(ctx context.Context) (plugin.Info, error) {
	return traceInfo(ctx, k.tr, k.impl)
}
func (k *tracedKernel) Configure(ctx context.Context, s plugin.Setup) error {
	return traceConfigure(ctx, k.tr, k.impl, s)
}

func (k *tracedKernel) GatherReduce(ctx context.Context, req *kernel.GatherReduceRequest) (*kernel.Result, error) {
	ctx, span := k.tr.start(ctx, "GatherReduce")
	res, err := k.impl.GatherReduce(ctx, req)
	kernelResult(span, res)
	end(span, err)
	return res, err
}

func (k *tracedKernel) Scatter(ctx context.Context, req *kernel.ScatterRequest) (*kernel.Result, error) {
	ctx, span := k.tr.start(ctx, "Scatter")
	res, err := k.impl.Scatter(ctx, req)
	kernelResult(span, res)
	end(span, err)
	return res, err
}

func (k *tracedKernel) ExpandCoalesce(ctx context.Context, req *kernel.ExpandCoalesceRequest) (*kernel.CoalesceResult, error) {
	ctx, span := k.tr.start(ctx, "ExpandCoalesce")
	res, err := k.impl.ExpandCoalesce(ctx, req)
	if res != nil {
		kernelResult(span, &res.Result)
	}
	end(span, err)
	return res, err
}

func (k *tracedKernel) Apply(ctx context.Context, req *kernel.ApplyRequest) (*kernel.Result, error) {
	ctx, span := k.tr.start(ctx, "Apply")
	res, err := k.impl.Apply(ctx, req)
	kernelResult(span, res)
	end(span, err)
	return res, err
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
	impl model.Model
	tr   *spans
}

func (m *tracedModel) Info(ctx context.Context) (plugin.Info, error) {
	return traceInfo(ctx, m.tr, m.impl)
}
func (m *tracedModel) Configure(ctx context.Context, s plugin.Setup) error {
	return traceConfigure(ctx, m.tr, m.impl, s)
}

func (m *tracedModel) Step(ctx context.Context, req *model.StepRequest) (*model.StepResult, error) {
	ctx, span := m.tr.start(ctx, "Step", seq(req.Seq), attribute.Bool("flowrun.model.train", req.Train))
	res, err := m.impl.Step(ctx, req)
	if res != nil {
		span.SetAttributes(attribute.Float64("flowrun.model.loss", res.Loss), attribute.Int64("flowrun.flops", res.FLOPs))
	}
	end(span, err)
	return res, err
}

func (m *tracedModel) Digest(ctx context.Context) ([]byte, error) {
	ctx, span := m.tr.start(ctx, "Digest")
	d, err := m.impl.Digest(ctx)
	end(span, err)
	return d, err
}

type tracedDevice struct {
	impl device.Device
	tr   *spans
}

func (d *tracedDevice) Info(ctx context.Context) (plugin.Info, error) {
	return traceInfo(ctx, d.tr, d.impl)
}
func (d *tracedDevice) Configure(ctx context.Context, s plugin.Setup) error {
	return traceConfigure(ctx, d.tr, d.impl, s)
}

func (d *tracedDevice) Profile(ctx context.Context) (device.Profile, error) {
	ctx, span := d.tr.start(ctx, "Profile")
	p, err := d.impl.Profile(ctx)
	end(span, err)
	return p, err
}

func (d *tracedDevice) Cost(ctx context.Context, req *device.CostRequest) (*device.CostResult, error) {
	ctx, span := d.tr.start(ctx, "Cost", seq(req.Seq), attribute.Int("flowrun.device.ops", len(req.Ops)))
	res, err := d.impl.Cost(ctx, req)
	end(span, err)
	return res, err
}
