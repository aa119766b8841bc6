package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/clock"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/telemetry"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/plugin"
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
func Run(ctx context.Context, opts Options) (*results.Results, error) {
	g := opts.Graph
	cfg := g.Config
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
	}
	if r.id == "" {
		r.id = NewRunID()
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	tp := opts.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	r.tracer = tp.Tracer("github.com/flowrun/flowrun/framework/runtime")
	defer r.mapper.Close()

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ctx, root := r.tracer.Start(ctx, "flowrun.run", trace.WithAttributes(
		attribute.String(telemetry.AttrGraph, cfg.Name),
		attribute.String(telemetry.AttrRunID, r.id),
		attribute.Int64("flowrun.seed", int64(cfg.Seed)),
	))
	defer root.End()
	fail := func(err error) error {
		root.RecordError(err)
		root.SetStatus(codes.Error, err.Error())
		return err
	}

	cacheOpts, releaseCacheOpts, err := CacheOptions(g)
	if err != nil {
		return nil, fail(err)
	}
	plugins, uses, err := openPlugins(ctx, opts.Plugins, cfg, r.id, cacheOpts)
	releaseCacheOpts()
	if err != nil {
		return nil, fail(err)
	}
	// The optimizer's state lives in each row after its values, so its
	// width fixes the stride of every copy of a row: host tables, Storage
	// and the rows staged between them.
	_, stride, err := batch.RowStride(cfg.Embedding, cfg.Dataset.Dim)
	if err != nil {
		return nil, fail(err)
	}
	layout := batch.NewLayout(cfg.Dataset, stride)
	tables, err := batch.NewTables(cfg.Seed, cfg.Dataset.Tables, cfg.Dataset.Rows, cfg.Dataset.Dim, stride)
	if err != nil {
		return nil, fail(err)
	}
	defer tables.Close()
	storage, err := newStorage(g, cfg, stride)
	if err != nil {
		return nil, fail(err)
	}
	if storage != nil {
		defer storage.Close()
	}
	// Every stage holds one batch and every edge queues its credits (0: a
	// hand-off, the lockstep pipeline ScratchPipe's windows assume).
	credits := cfg.NATS.Credits
	if r.hazards, err = newHazardChecker(opts.CheckHazards, g, storage != nil); err != nil {
		return nil, fail(err)
	}
	if opts.CheckHazards != HazardsOff && r.hazards == nil {
		r.log.Warn("--check-hazards: the graph has no Storage, so no stage reads what another writes; nothing to check")
	}
	root.SetAttributes(attribute.String("flowrun.check_hazards", string(opts.CheckHazards)))

	for _, gn := range g.Nodes {
		f, ok := opts.Stages[stage.Kind(gn.Kind)]
		if !ok {
			return nil, fail(fmt.Errorf("stage %s: unknown kind %q", gn.Name, gn.Kind))
		}
		scfg, ok := gn.Options.(stage.Config)
		if !ok {
			return nil, fail(fmt.Errorf("stage %s: options were not decoded by its kind", gn.Name))
		}
		set := stage.Settings{
			Name: gn.Name, Graph: cfg, Tables: tables, Layout: layout, Storage: storage, Plugins: plugins,
			TracerProvider: tp, Logger: r.log.With("stage", gn.Name), Metrics: r.metrics, Hazards: r.hazards,
		}
		st, err := f.Create(ctx, set, scfg)
		if err != nil {
			return nil, fail(err)
		}
		n := &node{Node: gn, id: set.ID(stage.Kind(gn.Kind)), stage: st}
		for _, out := range gn.Out {
			n.outs = append(n.outs, r.subject(out))
		}
		if len(gn.Out) == 0 {
			r.sinks++
		}
		r.nodes = append(r.nodes, n)
	}
	defer func() {
		for i := len(r.nodes) - 1; i >= 0; i-- {
			if c, ok := r.nodes[i].stage.(stage.Closer); ok {
				if err := c.Close(context.WithoutCancel(ctx)); err != nil {
					r.log.Warn("close stage", "stage", r.nodes[i].id, "err", err)
				}
			}
		}
	}()

	ahead := 0
	for _, n := range r.nodes {
		if la, ok := n.stage.(stage.Lookahead); ok {
			ahead += la.Lookahead()
		}
	}
	if r.pool, err = batch.NewPool(layout, poolBuffers(cfg, len(r.nodes), ahead)); err != nil {
		return nil, fail(err)
	}
	defer r.pool.Close()

	// Subscribe downstream first so that no publish waits for a consumer
	// that is still being set up.
	wctx, stopWorkers := context.WithCancel(ctx)
	defer stopWorkers()
	for i := len(r.nodes) - 1; i >= 0; i-- {
		n := r.nodes[i]
		if n.In == "" {
			continue
		}
		if n.sub, err = opts.Bus.Subscribe(wctx, r.subject(n.In), credits); err != nil {
			return nil, fail(fmt.Errorf("stage %s: %w", n.id, err))
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
	r.checkDone()
	for _, n := range r.nodes {
		n.modBySeq = make([]int64, r.total)
	}
	var wg sync.WaitGroup
	for _, n := range r.nodes {
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

	var failures <-chan error
	if opts.Plugins != nil {
		failures = opts.Plugins.Failures()
	}
	select {
	case <-r.done:
	case err := <-failures:
		cancel(err)
	case <-ctx.Done():
	}
	stopWorkers()
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		err = blameCrash(err, failures, uses)
		r.endBatches(err)
		return nil, fail(err)
	}

	for _, n := range r.nodes {
		if f, ok := n.stage.(stage.Finisher); ok {
			if err := f.Finish(ctx); err != nil {
				return nil, fail(&StageError{Stage: n.id, Seq: uint64(r.total), Err: fmt.Errorf("finish: %w", err)})
			}
		}
	}
	// Storage holds the trained values of the rows it caches; the host
	// tables get them back before the digest, which covers the tables.
	if storage != nil {
		if _, err := storage.Flush(tables); err != nil {
			return nil, fail(err)
		}
	}
	dense, err := plugins.Model.Digest(ctx)
	if err != nil {
		return nil, fail(fmt.Errorf("model digest: %w", err))
	}
	// The digest covers the touched rows of the host tables (with their
	// IDs and optimizer state), then the dense model.
	res := r.results(cfg, tables.Digest(dense), uses)
	if err := r.modeledClock(res, cfg, opts.Modeled); err != nil {
		return nil, fail(err)
	}
	var makespan int64
	if res.ModeledClock != nil {
		makespan = res.ModeledClock.MakespanNs
	}
	res.Primitives = r.primitives(makespan)
	res.HostRSSPeakBytes, res.Memory = memory(tables, storage, storageDevice(g), r.pool)
	root.SetAttributes(attribute.String("flowrun.digest", res.Digest))
	return res, nil
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
func newStorage(g *graph.Graph, cfg *config.Config, stride int) (*batch.Storage, error) {
	if !g.UsesStorage() {
		return nil, nil
	}
	rows := min(cfg.Cache.CacheRows(cfg.Dataset.Rows), cfg.Dataset.Rows)
	return batch.NewStorage(cfg.Dataset.Tables, rows, cfg.Dataset.Dim, stride)
}

// cacheHostOptions are the options the host adds to the cache's own
// (sdk/cache.Options besides capacity): the pipeline's windows, from the
// plan stage — past only in a pipelined graph with Storage, where batches
// before b may still be writing what b's collect reads; future whenever
// plan sends future batches — and, for a static cache that asks for the
// host's frequencies without giving any, a warm-up profile of the first
// training batches. The returned func releases what the options refer to,
// once the cache is configured.
func cacheHostOptions(g *graph.Graph) (map[string]any, func(), error) {
	cfg := g.Config
	opts := map[string]any{}
	past, future := g.Windows()
	if cfg.Pipeline == config.Pipelined && g.UsesStorage() && past > 0 {
		opts["past"] = past
	}
	if future > 0 {
		opts["future"] = future
	}
	if !wantsFrequencies(cfg.Cache.Options) {
		return opts, func() {}, nil
	}
	n, err := warmupBatches(cfg.Cache.Options, cfg.Dataset.Batches)
	if err != nil {
		return nil, nil, err
	}
	freq, err := profileFrequencies(cfg.Seed, cfg.Dataset, n)
	if err != nil {
		return nil, nil, fmt.Errorf("cache frequencies (a warm-up pass over the first %d batches): %w", n, err)
	}
	opts["frequencies"] = freq.Ref()
	return opts, func() { freq.Close() }, nil
}

// CacheOptions are the options a run configures the cache with: the
// graph's cache.options, the host's own over them (cacheHostOptions) and
// capacity from cache.size. release frees what they refer to; call it once
// the cache is configured.
func CacheOptions(g *graph.Graph) (opts map[string]any, release func(), err error) {
	cfg := g.Config
	host, release, err := cacheHostOptions(g)
	if err != nil {
		return nil, nil, err
	}
	opts = make(map[string]any, len(cfg.Cache.Options)+len(host)+1)
	maps.Copy(opts, cfg.Cache.Options)
	maps.Copy(opts, host)
	opts["capacity"] = cfg.Cache.CacheRows(cfg.Dataset.Rows)
	return opts, release, nil
}

// PluginSetup is the Setup a run configures a plugin with: the run's shape
// from cfg and the plugin's options (for the cache, CacheOptions) as JSON.
// flowrun validate builds its trial Setups here too, so that it tries
// what a run will configure.
func PluginSetup(cfg *config.Config, runID string, options map[string]any) (plugin.Setup, error) {
	raw, err := json.Marshal(options)
	if err != nil {
		return plugin.Setup{}, fmt.Errorf("options: %w", err)
	}
	tables := make([]plugin.Table, cfg.Dataset.Tables)
	for i := range tables {
		tables[i] = plugin.Table{Rows: cfg.Dataset.Rows, Dim: cfg.Dataset.Dim}
	}
	return plugin.Setup{
		RunID: runID, Seed: cfg.Seed, Tables: tables, BatchSize: cfg.Dataset.BatchSize,
		Lookups: cfg.Dataset.Lookups, DenseFeatures: cfg.Dataset.DenseFeatures, Options: raw,
	}, nil
}

// openPlugins opens and configures every plugin the graph names, the
// cache with cacheOpts (CacheOptions).
func openPlugins(ctx context.Context, host PluginOpener, cfg *config.Config, runID string, cacheOpts map[string]any) (stage.Plugins, []results.PluginUse, error) {
	var ps stage.Plugins
	var uses []results.PluginUse
	if host == nil {
		return ps, nil, errors.New("no plugin host")
	}
	configure := func(p plugin.Base, kind plugin.Kind, role, ref string, options map[string]any) error {
		setup, err := PluginSetup(cfg, runID, options)
		if err != nil {
			return fmt.Errorf("%s plugin %q: %w", role, ref, err)
		}
		if err := p.Configure(ctx, setup); err != nil {
			return fmt.Errorf("%s plugin %q: configure: %w", role, ref, err)
		}
		info, err := p.Info(ctx)
		if err != nil {
			return fmt.Errorf("%s plugin %q: info: %w", role, ref, err)
		}
		r, _ := pluginhost.ParseRef(ref) // the host has resolved it
		uses = append(uses, results.PluginUse{Kind: string(kind), Role: role, Ref: ref, Name: info.Name, Remote: !r.Builtin})
		return nil
	}
	var errs []error
	opened := func(role, ref string, err error) bool {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s plugin %q: %w", role, ref, err))
		}
		return err == nil
	}
	var err error
	if ps.Model, err = host.Model(ctx, cfg.Model.Plugin); opened("model", cfg.Model.Plugin, err) {
		errs = append(errs, configure(ps.Model, plugin.KindModel, "model", cfg.Model.Plugin, cfg.Model.Options))
	}
	if ps.Kernel, err = host.Kernel(ctx, cfg.Kernel.Plugin); opened("kernel", cfg.Kernel.Plugin, err) {
		errs = append(errs, configure(ps.Kernel, plugin.KindKernel, "kernel", cfg.Kernel.Plugin, cfg.Kernel.Options))
	}
	if ps.Cache, err = host.Cache(ctx, cfg.Cache.Plugin); opened("cache", cfg.Cache.Plugin, err) {
		errs = append(errs, configure(ps.Cache, plugin.KindCache, "cache", cfg.Cache.Plugin, cacheOpts))
	}
	ps.Devices = make(map[string]device.Device, len(cfg.Devices))
	names := make([]string, 0, len(cfg.Devices))
	for name := range cfg.Devices {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ref := cfg.Devices[name]
		role := "devices." + name
		d, err := host.Device(ctx, ref.Plugin)
		if opened(role, ref.Plugin, err) {
			ps.Devices[name] = d
			errs = append(errs, configure(d, plugin.KindDevice, role, ref.Plugin, ref.Options))
		}
	}
	return ps, uses, errors.Join(errs...)
}

func (r *run) results(cfg *config.Config, digest string, uses []results.PluginUse) *results.Results {
	wall := time.Since(r.started)
	res := &results.Results{
		Graph: cfg.Name, RunID: r.id, Seed: cfg.Seed, Batches: cfg.Dataset.Batches, Config: cfg.Echo,
		EvalBatches: r.total - cfg.Dataset.Batches, Digest: digest, Plugins: uses,
		WallMs: float64(wall.Nanoseconds()) / 1e6, Started: r.started,
	}
	for _, n := range r.nodes {
		s := results.Stage{Name: n.Name, Kind: n.Kind, Batches: len(n.wallNs), WallMs: results.PercentilesOf(n.wallNs)}
		if len(n.modNs) > 0 {
			p := results.PercentilesOf(n.modNs)
			s.ModeledMs = &p
		}
		res.Stages = append(res.Stages, s)
	}
	samples := float64(cfg.Dataset.BatchSize)
	if cfg.Dataset.Batches > 0 {
		res.IterationMs.Wall = res.WallMs / float64(max(r.total, 1))
		res.Throughput.WallSamplesPerS = samples * float64(max(r.total, 1)) / wall.Seconds()
	}
	series, totals, values := r.metrics.Snapshot()
	if pts := series["loss"]; len(pts) > 0 {
		rp := make([]results.Point, len(pts))
		for i, p := range pts {
			rp[i] = results.Point{Batch: p.Seq, Value: p.Value}
		}
		res.Metrics.Loss = results.NewLossCurve(rp, max(1, len(rp)/20))
	}
	named := map[string]**float64{"auc": &res.Metrics.AUC, "logloss": &res.Metrics.LogLoss, "ne": &res.Metrics.NE, "ndcg": &res.Metrics.NDCG}
	for name, v := range values {
		switch dst, ok := named[name]; {
		case ok:
			*dst = &v
		case name == "eval_samples":
			res.Metrics.EvalCount = int(v)
		default:
			// Figures a stage reports beyond the named ones (NDCG's k, the
			// queries it averaged over) are kept, not dropped.
			if res.Metrics.Extra == nil {
				res.Metrics.Extra = make(map[string]float64)
			}
			res.Metrics.Extra[name] = v
		}
	}
	hits, misses := int64(totals["cache.hits"]), int64(totals["cache.misses"])
	if hits+misses > 0 {
		res.Cache = &results.Cache{
			Plugin: cfg.Cache.Plugin, Rows: cfg.Cache.CacheRows(cfg.Dataset.Rows),
			Hits: hits, Misses: misses, Evictions: int64(totals["cache.evictions"]),
			HitRate: float64(hits) / float64(hits+misses),
			LinkBytes: map[string]int64{
				"to_device": int64(totals["link.bytes_to_device"]),
				"to_host":   int64(totals["link.bytes_to_host"]),
			},
		}
	}
	return res
}

// modeledClock schedules the run's real dependency graph on the modeled
// per-stage, per-batch times (DESIGN.md "Two clocks") and puts the modeled
// iteration time and throughput in res. Nothing is modeled when no stage
// charged a device.
func (r *run) modeledClock(res *results.Results, cfg *config.Config, hand func(*clock.Timeline, int)) error {
	charged := false
	for _, n := range r.nodes {
		charged = charged || len(n.modNs) > 0
	}
	if !charged || r.total == 0 {
		return nil
	}
	tl, lookahead, err := r.scheduleModeled(cfg)
	if err != nil {
		return err
	}
	if hand != nil {
		hand(tl, lookahead)
	}
	sum := tl.Summary()
	res.ModeledClock = &sum
	// With one batch SteadyIteration is the makespan.
	iter := tl.SteadyIteration()
	res.IterationMs.Modeled = iter / 1e6
	if iter > 0 {
		res.Throughput.ModeledSamplesPerS = float64(cfg.Dataset.BatchSize) / (iter / 1e9)
	}
	return nil
}
