package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/flowrun/flowrun/framework/bus"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/resources"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/telemetry"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/model"
)

// PluginOpener resolves plugin references (builtin:NAME or a binary path)
// to running, not yet configured plugins, and reports plugins that die.
// framework/pluginhost.Host is the implementation.
type PluginOpener interface {
	Cache(ctx context.Context, ref string) (cache.Cache, error)
	Kernel(ctx context.Context, ref string) (kernel.Kernel, error)
	Model(ctx context.Context, ref string) (model.Model, error)
	Device(ctx context.Context, ref string) (device.Device, error)
	// Failures delivers an error naming any plugin process that exits
	// while the run uses it.
	Failures() <-chan error
}

// Run runs the graph to the end and returns its results. On failure it
// returns the first error (a *StageError for a stage, the plugin host's
// error for a crashed plugin) and no results.
//
// A run goes through its phases in order, each a method of run: build
// (plugins opened, asked their Needs and configured, host tables,
// Storage, hazard checker, stages), start (batch pool, subscriptions,
// workers), wait (until every sink has seen every batch, or the first
// failure), finish (stages finished, Storage flushed, digest), then
// results (assemble); shutdown closes what build and start made, in
// reverse.
func Run(ctx context.Context, opts Options) (*results.Results, error) {
	r := newRun(opts)
	defer r.mapper.Close()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ctx, root := r.tracer.Start(ctx, "flowrun.run", trace.WithAttributes(
		attribute.String(telemetry.AttrGraph, opts.Graph.Config.Name),
		attribute.String(telemetry.AttrRunID, r.id),
		attribute.Int64("flowrun.seed", int64(opts.Graph.Config.Seed)),
		attribute.String("flowrun.check_hazards", string(opts.CheckHazards)),
	))
	defer root.End()
	var runErr error
	fail := func(err error) (*results.Results, error) {
		root.RecordError(err)
		root.SetStatus(codes.Error, err.Error())
		runErr = err
		return nil, err
	}
	defer r.shutdown(context.WithoutCancel(ctx))
	// The workers leave with the run's outcome (placed.go).
	defer func() { r.coord.Close(runErr) }()
	if err := r.checkPlacement(); err != nil {
		return fail(err)
	}
	var err error
	if r.ckpt, err = newCheckpointer(opts.Checkpoint, opts.Graph); err != nil {
		return fail(err)
	}
	if err := r.build(ctx); err != nil {
		return fail(err)
	}
	if err := r.resume(ctx); err != nil {
		return fail(err)
	}
	wg, stopWorkers, err := r.start(ctx, cancel)
	if err != nil {
		return fail(err)
	}
	if err := r.wait(ctx, cancel, wg, stopWorkers); err != nil {
		return fail(err)
	}
	if err := r.gatherReports(ctx); err != nil {
		return fail(err)
	}
	digest, err := r.finish(ctx)
	if err != nil {
		return fail(err)
	}
	res, err := r.assemble(digest)
	if err != nil {
		return fail(err)
	}
	root.SetAttributes(attribute.String("flowrun.digest", res.Digest))
	return res, nil
}

// newRun is a run's state before its build.
func newRun(opts Options) *run {
	r := &run{
		opts:       opts,
		id:         opts.RunID,
		log:        opts.Logger,
		metrics:    &stage.Metrics{},
		seen:       make(map[uint64]int),
		progress:   make(chan struct{}),
		batchSpans: make(map[uint64]trace.Span),
		total:      -1,
		done:       make(chan struct{}),
		started:    time.Now(),
		tp:         opts.TracerProvider,
	}
	if r.id == "" {
		r.id = NewRunID()
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.tp == nil {
		r.tp = noop.NewTracerProvider()
	}
	r.tracer = r.tp.Tracer("github.com/flowrun/flowrun/framework/engine")
	return r
}

// build is the build phase: the shape of the data, the plugins (opened,
// asked their Needs, configured), the host tables, Storage when a stage
// uses it, the hazard checker, and the stages.
func (r *run) build(ctx context.Context) error {
	g := r.opts.Graph
	var err error
	if r.shape, err = NewShape(g); err != nil {
		return err
	}
	if err := CheckResources(g, r.shape, resources.Machine()); err != nil {
		return err
	}
	if err := r.buildPlugins(ctx); err != nil {
		return err
	}
	if err := r.buildModels(ctx); err != nil {
		return err
	}
	if r.tables, err = r.shape.NewTables(); err != nil {
		return err
	}
	if f := r.opts.Tables; f != nil {
		if err := f(r.tables); err != nil {
			return err
		}
	}
	if r.storage, err = newStorage(g, r.shape); err != nil {
		return err
	}
	if r.hazards, err = newHazardChecker(r.opts.CheckHazards, g, r.opts.Stages, r.storage != nil); err != nil {
		return err
	}
	if r.opts.CheckHazards != HazardsOff && r.hazards == nil {
		r.log.Warn("--check-hazards: the graph has no Storage, so no stage reads what another writes; nothing to check")
	}
	return r.createStages(ctx)
}

// buildPlugins opens every plugin, asks the cache its Needs and checks
// the graph against them, makes the warm-up profile the cache asked for,
// and configures them all.
func (r *run) buildPlugins(ctx context.Context) error {
	g := r.opts.Graph
	var err error
	if r.plugins, err = openPlugins(ctx, r.opts.Plugins, g.Config); err != nil {
		return err
	}
	cacheOpts := cacheSetupOptions(g)
	needs, err := askNeeds(ctx, r.plugins.Cache, g, r.shape, r.id, cacheOpts)
	if err != nil {
		return err
	}
	r.cacheMemory = needs.Memory
	release, err := withProfile(needs, g.Config, cacheOpts, &r.profileRows)
	if err != nil {
		return err
	}
	defer release()
	r.uses, err = configurePlugins(ctx, r.plugins, r.shape, r.id, cacheOpts)
	return err
}

// createStages creates a stage of each node's kind, in topological order.
func (r *run) createStages(ctx context.Context) error {
	g := r.opts.Graph
	for _, gn := range g.Nodes {
		f, ok := r.opts.Stages[stage.Kind(gn.Kind)]
		if !ok {
			return fmt.Errorf("stage %s: unknown kind %q", gn.Name, gn.Kind)
		}
		if skip, err := r.placed(gn, f); skip || err != nil {
			if err != nil {
				return err
			}
			continue
		}
		scfg, ok := gn.Options.(stage.Config)
		if !ok {
			return fmt.Errorf("stage %s: options were not decoded by its kind", gn.Name)
		}
		set := stage.Settings{
			Name: gn.Name, Graph: g.Config, Tables: r.tables, Layout: r.shape.Layout, Storage: r.storage, Plugins: r.plugins,
			TracerProvider: r.tp, Logger: r.log.With("stage", gn.Name), Metrics: r.metrics, Hazards: r.hazards,
			OpenCache: r.openCache,
		}
		set, err := r.stageSettings(gn, set)
		if err != nil {
			return err
		}
		st, err := f.Create(ctx, set, scfg)
		if err != nil {
			return err
		}
		r.addNode(&node{Node: gn, id: set.ID(stage.Kind(gn.Kind)), stage: st})
	}
	return nil
}

// addNode adds n, a created stage or a remote one, to the run's nodes.
func (r *run) addNode(n *node) {
	for _, out := range n.Out {
		n.outs = append(n.outs, r.subject(out))
	}
	if len(n.Out) == 0 {
		r.sinks++
	}
	r.nodes = append(r.nodes, n)
}

// start is the start phase: the batch pool, sized for the stages and
// what they look ahead, every stage subscribed to its input subject
// (downstream first, so that no publish waits for a consumer still being
// set up), and a worker per stage. A worker's error cancels ctx with it
// as the cause. stopWorkers stops them; wg waits for them.
func (r *run) start(ctx context.Context, cancel context.CancelCauseFunc) (wg *sync.WaitGroup, stopWorkers func(), err error) {
	cfg := r.opts.Graph.Config
	ahead := 0
	for _, n := range r.nodes {
		if la, ok := n.stage.(stage.Lookahead); ok {
			ahead += la.Lookahead()
		}
	}
	// The run is complete when every sink has seen every batch of every
	// source.
	r.total = 0
	for _, n := range r.nodes {
		if src, ok := n.stage.(stage.Source); ok {
			r.total += int(src.Batches())
		}
	}
	remoteAhead, err := r.awaitWorkers(ctx) // placed.go; 0 without a placement
	if err != nil {
		return nil, nil, err
	}
	ahead += remoteAhead
	if err := r.startTransport(); err != nil {
		return nil, nil, err
	}
	if r.pool, err = batch.NewPool(r.shape.Layout, poolBuffers(cfg, len(r.nodes), ahead)); err != nil {
		return nil, nil, err
	}
	wctx, stopWorkers := context.WithCancel(ctx)
	// Every stage holds one batch and every edge queues its credits (0: a
	// hand-off, the lockstep pipeline ScratchPipe's windows assume).
	for i := len(r.nodes) - 1; i >= 0; i-- {
		n := r.nodes[i]
		if n.In == "" || n.remote != "" {
			continue
		}
		if n.sub, err = r.opts.Bus.Subscribe(wctx, r.subject(n.In), cfg.NATS.Credits); err != nil {
			stopWorkers()
			return nil, nil, fmt.Errorf("stage %s: %w", n.id, err)
		}
	}
	r.checkDone()
	for _, n := range r.nodes {
		n.modBySeq = make([]int64, r.total)
	}
	if err := r.startCheckpoints(ctx); err != nil {
		stopWorkers()
		return nil, nil, err
	}
	wg = &sync.WaitGroup{}
	for _, n := range r.nodes {
		if n.remote != "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if n.In == "" {
				err = r.source(wctx, n)
			} else {
				err = r.worker(wctx, n)
			}
			if err != nil && wctx.Err() == nil {
				cancel(err)
			}
		}()
	}
	return wg, stopWorkers, nil
}

// wait is the wait phase: until every sink has seen every batch, a
// plugin process exits, or ctx ends (a stage's error cancels it); then
// the workers stop. A failed run's error names the stage, or the crashed
// plugin before it.
func (r *run) wait(ctx context.Context, cancel context.CancelCauseFunc, wg *sync.WaitGroup, stopWorkers func()) error {
	var failures <-chan error
	if r.opts.Plugins != nil {
		failures = r.opts.Plugins.Failures()
	}
	var lost <-chan struct{}
	if r.opts.Bus != nil {
		lost = r.opts.Bus.Lost()
	}
	select {
	case <-r.done:
	case err := <-failures:
		cancel(err)
	case <-lost:
		cancel(r.opts.Bus.LostErr())
	case err := <-r.coord.Failed():
		cancel(err)
	case <-ctx.Done():
	}
	stopWorkers()
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		err = blameCrash(err, failures, r.uses)
		if errors.Is(err, bus.ErrServerLost) {
			err = fmt.Errorf("%w; batches each stage completed: %s", err, r.completedPerStage())
		}
		r.endBatches(err)
		return err
	}
	return nil
}

// completedPerStage says how far each stage got, for an error that ends
// the run midway: "load/load 0–41, plan/plan 0–40, …" (none: no batch).
// Stages process batches in sequence order, so the count is the range.
func (r *run) completedPerStage() string {
	parts := make([]string, 0, len(r.nodes))
	for _, n := range r.nodes {
		switch done := len(n.wallNs); done {
		case 0:
			parts = append(parts, n.id+" none")
		default:
			parts = append(parts, fmt.Sprintf("%s 0–%d", n.id, done-1))
		}
	}
	return strings.Join(parts, ", ")
}

// finish ends a completed run: every stage that finishes does, Storage
// gives the host tables back the trained values of the rows it caches,
// and the digest covers the touched rows of the host tables (with their
// IDs and optimizer state), then the dense model.
func (r *run) finish(ctx context.Context) (string, error) {
	for _, n := range r.nodes {
		if f, ok := n.stage.(stage.Finisher); ok {
			if err := f.Finish(ctx); err != nil {
				return "", &StageError{Stage: n.id, Seq: uint64(r.total), Err: fmt.Errorf("finish: %w", err)}
			}
		}
	}
	if r.storage != nil {
		if _, err := r.storage.Flush(r.tables); err != nil {
			return "", err
		}
	}
	dense, err := r.plugins.Model.Digest(ctx)
	if err != nil {
		return "", fmt.Errorf("model digest: %w", err)
	}
	base, err := r.tables.DigestErr(dense)
	if err != nil {
		return "", err
	}
	if err := r.saveModel(ctx, base); err != nil { // models_checkpoint.go
		return "", err
	}
	return r.modelsDigest(ctx, base)
}

// shutdown closes what build and start made, in reverse: the batch pool,
// the stages (last created first), Storage, the host tables. Plugins
// belong to the host that opened them.
func (r *run) shutdown(ctx context.Context) {
	r.transport.close()
	if r.pool != nil {
		r.pool.Close()
	}
	for i := len(r.nodes) - 1; i >= 0; i-- {
		if c, ok := r.nodes[i].stage.(stage.Closer); ok {
			if err := c.Close(ctx); err != nil {
				r.log.Warn("close stage", "stage", r.nodes[i].id, "err", err)
			}
		}
	}
	if r.storage != nil {
		r.storage.Close()
	}
	if r.tables != nil {
		r.tables.Close()
	}
	r.closeModels()
}

// poolBuffers is the size of the batch pool, the bound on batches in
// flight: enough buffers for every stage to hold one batch and every edge
// to queue its credits (more would only add memory, not overlap), or one
// in a sequential graph; plus the batches the stages that look ahead
// hold. The modeled clock and the strict hazard checker assume the same
// bound.
func poolBuffers(cfg *config.Config, stages, lookahead int) int {
	if cfg.Pipeline == config.Sequential {
		return 1 + lookahead
	}
	return stages + cfg.NATS.Credits + lookahead
}

// newStorage creates the run's Storage, one table of cache.size rows per
// embedding table, when some stage uses it; otherwise nil, so a graph
// without a scratchpad pays nothing for one.
func newStorage(g *graph.Graph, shape *Shape) (*batch.Storage, error) {
	if !g.UsesStorage() {
		return nil, nil
	}
	return shape.NewStorage(g.Config.CacheCapacity())
}
