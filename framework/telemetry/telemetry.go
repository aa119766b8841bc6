package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ServiceName is the service.name every flowrun process reports.
const ServiceName = "flowrun"

// Resource attribute keys identifying a run in Jaeger and in span files.
const (
	AttrGraph = "flowrun.graph"
	AttrRunID = "flowrun.run_id"
)

// Span attribute keys shared by the stage runtime and the tests and reports
// that read traces back.
const (
	AttrStage    = "flowrun.stage"
	AttrBatchSeq = "flowrun.batch.seq"
)

// DefaultShutdownTimeout bounds Shutdown: long enough to flush a batch to a
// live collector, short enough that a missing one costs a run two seconds.
const DefaultShutdownTimeout = 2 * time.Second

// Resource describes the process producing spans.
type Resource struct {
	// Graph is the graph's name (flowrun.graph).
	Graph string
	// RunID identifies the run (flowrun.run_id); every worker of one run
	// uses the same id.
	RunID string
	// Version, if set, becomes service.version.
	Version string
	// Attributes are further resource attributes (e.g. the worker's host).
	Attributes map[string]string
}

func (r Resource) otel() (*resource.Resource, error) {
	attrs := []attribute.KeyValue{attribute.String("service.name", ServiceName)}
	if r.Graph != "" {
		attrs = append(attrs, attribute.String(AttrGraph, r.Graph))
	}
	if r.RunID != "" {
		attrs = append(attrs, attribute.String(AttrRunID, r.RunID))
	}
	if r.Version != "" {
		attrs = append(attrs, attribute.String("service.version", r.Version))
	}
	for k, v := range r.Attributes {
		attrs = append(attrs, attribute.String(k, v))
	}
	// Schemaless so that merging with the SDK's default (telemetry.sdk.*)
	// can never fail on a schema URL mismatch; ours win on conflicts.
	return resource.Merge(resource.Default(), resource.NewSchemaless(attrs...))
}

// Option configures Setup.
type Option func(*options)

type options struct {
	logger          *slog.Logger
	stdout          io.Writer
	shutdownTimeout time.Duration
}

// WithLogger sets the logger Telemetry hands out. Default: text on stderr.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithStdout sets where the stdout exporter writes (default os.Stdout).
func WithStdout(w io.Writer) Option { return func(o *options) { o.stdout = w } }

// WithShutdownTimeout replaces DefaultShutdownTimeout.
func WithShutdownTimeout(d time.Duration) Option {
	return func(o *options) { o.shutdownTimeout = d }
}

// Telemetry is what a run hands to its components: a tracer provider and a
// logger. It must be shut down to flush spans.
type Telemetry struct {
	spec    string
	tp      trace.TracerProvider
	sdk     *sdktrace.TracerProvider // nil for none
	exp     *recordingExporter
	logger  *slog.Logger
	timeout time.Duration

	once sync.Once
	err  error
}

// Setup builds the telemetry for spec (see ValidateSpec for the forms).
// It never touches the otel globals.
//
// The file and stdout exporters run synchronously (every ended span is
// written before End returns), so a span file is complete the moment
// Shutdown returns and readable while the run is going. OTLP exporters use a
// batch span processor: the network must not sit on a stage's path.
func Setup(ctx context.Context, spec string, res Resource, opts ...Option) (*Telemetry, error) {
	o := options{stdout: os.Stdout, shutdownTimeout: DefaultShutdownTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	sp, err := parseSpec(spec)
	if err != nil {
		return nil, err
	}
	logger := o.logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if res.Graph != "" {
		logger = logger.With("graph", res.Graph)
	}
	if res.RunID != "" {
		logger = logger.With("run", res.RunID)
	}
	t := &Telemetry{spec: spec, logger: logger, timeout: o.shutdownTimeout}
	if sp.kind == kindNone {
		t.tp = noop.NewTracerProvider()
		return t, nil
	}

	r, err := res.otel()
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	var exp sdktrace.SpanExporter
	batch := false
	switch sp.kind {
	case kindStdout:
		exp, err = stdouttrace.New(stdouttrace.WithWriter(o.stdout))
		if err != nil {
			return nil, fmt.Errorf("telemetry: stdout exporter: %w", err)
		}
	case kindFile:
		exp, err = createFileExporter(sp.path)
		if err != nil {
			return nil, err
		}
	case kindOTLPGRPC:
		// New does not dial: a collector that is down shows up at export.
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(sp.endpoint), otlptracegrpc.WithInsecure())
		if err != nil {
			return nil, fmt.Errorf("telemetry: otlp-grpc exporter %s: %w", sp.endpoint, err)
		}
		batch = true
	case kindOTLPHTTP:
		hopts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(sp.endpoint), otlptracehttp.WithInsecure()}
		if sp.urlPath != "" {
			hopts = append(hopts, otlptracehttp.WithURLPath(sp.urlPath))
		}
		exp, err = otlptracehttp.New(ctx, hopts...)
		if err != nil {
			return nil, fmt.Errorf("telemetry: otlp-http exporter %s: %w", sp.endpoint, err)
		}
		batch = true
	}
	t.exp = &recordingExporter{SpanExporter: exp}
	proc := sdktrace.WithSyncer(t.exp)
	if batch {
		proc = sdktrace.WithBatcher(t.exp)
	}
	t.sdk = sdktrace.NewTracerProvider(sdktrace.WithResource(r), proc)
	t.tp = t.sdk
	return t, nil
}

func createFileExporter(path string) (*JSONLExporter, error) {
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("telemetry: file exporter %s: %w", path, err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("telemetry: file exporter: %w", err)
	}
	return NewJSONLExporter(f), nil
}

// TracerProvider is the provider components create their tracers from; a
// no-op one for the none exporter.
func (t *Telemetry) TracerProvider() trace.TracerProvider { return t.tp }

// Tracer is TracerProvider().Tracer(name), for brevity at call sites.
func (t *Telemetry) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return t.tp.Tracer(name, opts...)
}

// Logger is the run's structured logger, tagged with graph and run id.
func (t *Telemetry) Logger() *slog.Logger { return t.logger }

// Shutdown flushes and closes the exporter. It returns within the shutdown
// timeout even when an OTLP collector is unreachable, reporting that as an
// error (spans not yet sent are then lost). Later calls return the first
// call's result.
//
// An already cancelled ctx does not skip the flush: the run's context is
// typically the one Ctrl-C just cancelled, and that is exactly when the
// trace matters. The shutdown timeout bounds the wait instead.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	t.once.Do(func() {
		if t.sdk == nil {
			return
		}
		if ctx.Err() != nil {
			ctx = context.WithoutCancel(ctx)
		}
		ctx, cancel := context.WithTimeout(ctx, t.timeout)
		defer cancel()
		err := t.sdk.Shutdown(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w (gave up after %s)", err, t.timeout)
		}
		if err == nil {
			// The span processors hand export errors to the otel global
			// error handler and report success; surface the final flush's.
			if xerr := t.exp.lastError(); xerr != nil {
				err = fmt.Errorf("last export failed: %w", xerr)
			}
		}
		if err != nil {
			t.err = fmt.Errorf("telemetry: shutdown %s: %w", t.spec, err)
		}
	})
	return t.err
}

// recordingExporter remembers whether the latest export failed, so that
// Shutdown can return the error the span processors would swallow.
type recordingExporter struct {
	sdktrace.SpanExporter
	mu   sync.Mutex
	last error
}

func (e *recordingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	e.mu.Lock()
	e.last = err
	e.mu.Unlock()
	return err
}

func (e *recordingExporter) lastError() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.last
}
