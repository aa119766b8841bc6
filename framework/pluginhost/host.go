package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/device/costmodel"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// ScopeName is the instrumentation scope of the host's spans.
const ScopeName = "github.com/flowrun/flowrun/framework/pluginhost"

// Defaults for the zero Settings.
const (
	DefaultStartTimeout    = 30 * time.Second
	DefaultDescribeTimeout = 10 * time.Second
)

// pollInterval is how often a subprocess is checked for an exit; a crash
// is reported within it (plus scheduling).
const pollInterval = 50 * time.Millisecond

// ErrClosed is returned by a Host that has been closed.
var ErrClosed = errors.New("plugin host closed")

// Settings are what a Host is built with. Nothing is read from globals.
type Settings struct {
	// Builtins are the in-process plugins "builtin:NAME" may name.
	Builtins Builtins
	// TracerProvider makes the tracer of the per-call spans; nil records
	// nothing.
	TracerProvider trace.TracerProvider
	// Logger receives the host's and go-plugin's messages, including the
	// log lines plugins write to stderr; nil discards them.
	Logger hclog.Logger
	// Stderr receives what plugin processes write to their os.Stdout and
	// os.Stderr while serving (go-plugin's SyncStdout/SyncStderr); nil
	// discards it.
	Stderr io.Writer
	// StartTimeout bounds a plugin binary's start-up and handshake
	// (default DefaultStartTimeout).
	StartTimeout time.Duration
	// DescribeTimeout bounds "PATH describe" (default DefaultDescribeTimeout).
	DescribeTimeout time.Duration
	// BuiltinServer, when set, serves a builtin in a process of its own
	// for a caller that asks (WithOwnProcess, ownprocess.go).
	BuiltinServer *BuiltinServer
}

// Host resolves plugin references and owns the plugin subprocesses it
// launched. It is safe for concurrent use.
type Host struct {
	builtins        Builtins
	tracer          trace.Tracer
	logger          hclog.Logger
	stderr          io.Writer
	startTimeout    time.Duration
	describeTimeout time.Duration
	server          *BuiltinServer

	failures chan error
	done     chan struct{}
	watchers sync.WaitGroup

	mu     sync.Mutex
	closed bool
	procs  []*process
	// pins are the sums a binary must have, by absolute path (Pin).
	pins map[string][]string
	// warned are the unpinned binaries the host has warned about.
	warned map[string]bool
}

// New makes a Host. It first removes shared-memory regions left behind by
// processes that no longer run (region.Sweep), so a crashed run does not
// leak memory into the next, and kills what plugins of a dead host forked
// and left running (sweepOrphans).
func New(set Settings) (*Host, error) {
	h := &Host{
		builtins:        set.Builtins,
		logger:          set.Logger,
		stderr:          set.Stderr,
		startTimeout:    set.StartTimeout,
		describeTimeout: set.DescribeTimeout,
		server:          set.BuiltinServer,
		failures:        make(chan error, 8),
		done:            make(chan struct{}),
	}
	tp := set.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	h.tracer = tp.Tracer(ScopeName)
	if h.logger == nil {
		h.logger = hclog.NewNullLogger()
	}
	if h.stderr == nil {
		h.stderr = io.Discard
	}
	if h.startTimeout <= 0 {
		h.startTimeout = DefaultStartTimeout
	}
	if h.describeTimeout <= 0 {
		h.describeTimeout = DefaultDescribeTimeout
	}
	dir := region.Dir()
	n, err := region.Sweep(dir)
	if err != nil {
		return nil, fmt.Errorf("sweep stale regions in %s: %w", dir, err)
	}
	if n > 0 {
		h.logger.Info("removed stale shared-memory regions", "dir", dir, "count", n)
	}
	if n := sweepOrphans(); n > 0 {
		h.logger.Info("killed processes left running by plugins of a host that no longer runs", "count", n)
	}
	return h, nil
}

// Failures reports plugin subprocesses that exited while the host was open,
// each as an *ExitError. The channel is closed by Close.
func (h *Host) Failures() <-chan error { return h.failures }

// Processes lists the plugin subprocesses the host has launched and that
// have not exited.
func (h *Host) Processes() []Process {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Process
	for _, p := range h.procs {
		if !p.client.Exited() {
			out = append(out, p.Process)
		}
	}
	return out
}

// Close stops every plugin subprocess, with its process group, and waits
// for them to go, at most a few seconds (stopGrace + killWait). Exits it
// causes are not failures. Calls on plugins resolved from the host fail
// afterwards (builtins excepted); Close is idempotent.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	procs := h.procs
	h.procs = nil
	close(h.done)
	h.mu.Unlock()

	h.watchers.Wait()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.stop(true); err != nil {
				h.logger.Warn(err.Error())
			}
		}()
	}
	wg.Wait()
	close(h.failures)
	return nil
}

// Cache resolves ref to a cache policy.
func (h *Host) Cache(ctx context.Context, ref string) (cache.Cache, error) {
	impl, tr, err := resolve(ctx, h, plugin.KindCache, ref, h.builtins.Caches)
	if err != nil {
		return nil, err
	}
	c := &tracedCache{tracedBase{impl, tr}, impl}
	// A policy that declares its Needs keeps declaring them through the
	// wrapper; one that does not stays one that does not.
	if d, ok := impl.(cache.Declarer); ok {
		return &tracedDeclarer{c, d}, nil
	}
	return c, nil
}

// Kernel resolves ref to a kernel.
func (h *Host) Kernel(ctx context.Context, ref string) (kernel.Kernel, error) {
	impl, tr, err := resolve(ctx, h, plugin.KindKernel, ref, h.builtins.Kernels)
	if err != nil {
		return nil, err
	}
	return &tracedKernel{tracedBase{impl, tr}, impl}, nil
}

// Model resolves ref to a model.
func (h *Host) Model(ctx context.Context, ref string) (model.Model, error) {
	impl, tr, err := resolve(ctx, h, plugin.KindModel, ref, h.builtins.Models)
	if err != nil {
		return nil, err
	}
	return &tracedModel{tracedBase{impl, tr}, impl}, nil
}

// Device resolves ref to a device. A device that hands over its cost
// model (device.ModelDescriber) has its Cost evaluated here
// (costmodel.Local): for one in another process that is a round trip per
// stage per batch saved, with the same figures.
func (h *Host) Device(ctx context.Context, ref string) (device.Device, error) {
	impl, tr, err := resolve(ctx, h, plugin.KindDevice, ref, h.builtins.Devices)
	if err != nil {
		return nil, err
	}
	local := costmodel.NewLocal(impl)
	return &tracedDevice{tracedBase{local, tr}, local}, nil
}

// resolve makes the plugin ref names, in process or as a subprocess, and
// the span helper its decorator uses.
func resolve[T plugin.Base](ctx context.Context, h *Host, kind plugin.Kind, ref string, builtins map[string]func() T) (T, *spans, error) {
	var zero T
	if h.isClosed() {
		return zero, nil, ErrClosed
	}
	if err := h.builtins.check(kind, ref); err != nil {
		return zero, nil, err
	}
	r, _ := ParseRef(ref)
	attrs := []attribute.KeyValue{
		attribute.String("flowrun.plugin.kind", string(kind)),
		attribute.String("flowrun.plugin.name", r.Name),
		attribute.String("flowrun.plugin.ref", r.String()),
	}
	if r.Builtin && !h.ownProcess(ctx, r) {
		impl := builtins[r.Name]()
		return impl, &spans{tracer: h.tracer, prefix: string(kind) + "/" + r.Name + ".", kind: trace.SpanKindInternal, attrs: attrs}, nil
	}
	raw, proc, err := h.launch(ctx, kind, r)
	if err != nil {
		return zero, nil, err
	}
	impl, ok := raw.(T)
	if !ok {
		// The kind's HostPlugin always returns T; this guards a mix-up.
		proc.stop(true)
		return zero, nil, fmt.Errorf("%s plugin %q: dispensed %T", kind, ref, raw)
	}
	attrs = append(attrs, attribute.Int("flowrun.plugin.pid", proc.Pid))
	return impl, &spans{tracer: h.tracer, prefix: string(kind) + "/" + r.Name + ".", kind: trace.SpanKindClient, attrs: attrs}, nil
}

func (h *Host) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}
