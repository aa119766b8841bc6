// Package stagetest builds the small, isolated environment a stage kind's
// unit tests need: the Settings a stage is handed (a tiny dataset, host
// tables, a batch layout, optionally Storage, and in-process plugins
// configured through plugin.Setup, all derived by the runtime's own
// engine.Shape), batches in their own buffers, and the plan a cache
// policy makes for one; and, for the tests that check or run whole
// graphs, Build (as flowrun validate checks) and RunGraph.
//
// It is for tests only. It imports plugins/ (the built-in plugins) and
// framework/ packages below the stage kinds, never a stage kind itself: a
// test hands RunGraph the kinds its graphs use.
package stagetest

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/bus"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/data"
	"github.com/flowrun/flowrun/framework/engine"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/plugins/caches/belady"
	"github.com/flowrun/flowrun/plugins/caches/heca"
	"github.com/flowrun/flowrun/plugins/caches/lfu"
	"github.com/flowrun/flowrun/plugins/caches/lru"
	"github.com/flowrun/flowrun/plugins/caches/mpcache"
	"github.com/flowrun/flowrun/plugins/caches/none"
	"github.com/flowrun/flowrun/plugins/caches/scratchpipe"
	"github.com/flowrun/flowrun/plugins/caches/static"
	"github.com/flowrun/flowrun/plugins/devices/cpudram"
	"github.com/flowrun/flowrun/plugins/devices/hbm"
	"github.com/flowrun/flowrun/plugins/devices/nmpdimm"
	"github.com/flowrun/flowrun/plugins/kernels/cpu"
	"github.com/flowrun/flowrun/plugins/models/dlrm"
	"github.com/flowrun/flowrun/plugins/models/logreg"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// Options shape an environment. The zero value is a small pipelined
// training run with no Storage.
type Options struct {
	// Dataset replaces Small() when its Tables is set.
	Dataset config.Dataset
	// CacheRows, when > 0, sizes the LRU cache and creates a Storage of
	// that many slots per table.
	CacheRows int64
	// Sequential sets pipeline: sequential (the cache stages need it).
	Sequential bool
	// Embedding replaces the default (sgd) when its Optimizer is set.
	Embedding config.Embedding
}

// Small is a dataset small enough to check by hand: 2 tables of 64 rows of
// dim 4, 4 samples of 3 lookups.
func Small() config.Dataset {
	d := config.Default().Dataset
	d.Batches, d.EvalBatches = 4, 0
	d.BatchSize, d.Tables, d.Rows, d.Dim, d.Lookups, d.DenseFeatures = 4, 2, 64, 4, 3, 3
	return d
}

// Env is a stage's world in a test.
type Env struct {
	Set    stage.Settings
	mapper region.Mapper
	gen    *data.Synthetic
}

// New builds an environment; everything it creates is released when the
// test ends.
func New(t testing.TB, o Options) *Env {
	t.Helper()
	cfg := config.Default()
	if o.Dataset.Tables > 0 {
		cfg.Dataset = o.Dataset
	} else {
		cfg.Dataset = Small()
	}
	if o.Sequential {
		cfg.Pipeline = config.Sequential
	}
	if o.Embedding.Optimizer != "" {
		cfg.Embedding = o.Embedding
	}
	d := cfg.Dataset
	// The run's own derivation of stride, layout, tables and Setup.
	shape, err := engine.NewShape(&graph.Graph{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	tables, err := shape.NewTables()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tables.Close() })
	e := &Env{Set: stage.Settings{
		Name: "test", Graph: cfg, Tables: tables, Layout: shape.Layout,
		Logger: slog.New(slog.DiscardHandler), Metrics: &stage.Metrics{},
	}}
	t.Cleanup(func() { e.mapper.Close() })
	if e.gen, err = data.NewSynthetic(cfg.Seed, d); err != nil {
		t.Fatal(err)
	}

	setup := func(p plugin.Base, options map[string]any) {
		t.Helper()
		s, err := shape.Setup("test", options)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Configure(context.Background(), s); err != nil {
			t.Fatalf("configure %T: %v", p, err)
		}
	}
	e.Set.Kernel = cpu.New()
	setup(e.Set.Kernel, nil)
	e.Set.Model = logreg.New()
	setup(e.Set.Model, map[string]any{"learning_rate": 0.1})
	e.Set.Devices = map[string]device.Device{"host": cpudram.New(), "gpu": hbm.New()}
	for _, dev := range e.Set.Devices {
		setup(dev, nil)
	}
	if o.CacheRows > 0 {
		e.Set.Cache = lru.New()
		setup(e.Set.Cache, map[string]any{"capacity": o.CacheRows})
		if e.Set.Storage, err = shape.NewStorage(o.CacheRows); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Set.Storage.Close() })
	}
	return e
}

// Batch returns an empty batch seq in a buffer of its own.
func (e *Env) Batch(t testing.TB, seq uint64) *batch.Batch {
	t.Helper()
	r, err := region.Create(fmt.Sprintf("test-batch%d", seq), e.Set.Layout.Size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return batch.New(&batch.Header{Seq: seq, Buffer: r.Name(), Refs: e.Set.Layout.Refs(r.Name())}, &e.mapper)
}

// Load fills b with the synthetic dataset's batch b.Seq and touches its
// rows, as the load stage does.
func (e *Env) Load(t testing.TB, b *batch.Batch) {
	t.Helper()
	var a data.Arrays
	var err error
	if a.IDs, err = b.Int64s(batch.IDs); err == nil {
		if a.Offsets, err = b.Int64s(batch.Offsets); err == nil {
			if a.Dense, err = b.Float32s(batch.Dense); err == nil {
				if a.Labels, err = b.Float32s(batch.Labels); err == nil {
					err = e.gen.Fill(b.Seq, b.Eval, a)
				}
			}
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	e.touch(t, a.IDs)
}

// touch initialises the host rows ids names (table-major, IDsPerTable per
// table), as the load stage does for every batch.
func (e *Env) touch(t testing.TB, ids []int64) {
	t.Helper()
	n := e.Set.Layout.IDsPerTable
	for tab := range e.Set.Layout.Tables {
		// An ID outside the table is left for the stage under test to
		// reject; Touch has touched the others.
		_ = e.Set.Tables.Touch(tab, ids[tab*n:(tab+1)*n])
	}
}

// SetIDs writes table-major IDs into b, every bag Lookups long: ids[t] are
// table t's BatchSize·Lookups IDs in bag order.
func (e *Env) SetIDs(t testing.TB, b *batch.Batch, ids [][]int64) {
	t.Helper()
	l := e.Set.Layout
	all, err := b.Int64s(batch.IDs)
	if err != nil {
		t.Fatal(err)
	}
	offs, err := b.Int64s(batch.Offsets)
	if err != nil {
		t.Fatal(err)
	}
	for tab, row := range ids {
		if len(row) != l.IDsPerTable {
			t.Fatalf("table %d: %d ids, want %d", tab, len(row), l.IDsPerTable)
		}
		copy(all[tab*l.IDsPerTable:], row)
		for s := 0; s <= l.BatchSize; s++ {
			offs[tab*(l.BatchSize+1)+s] = int64(s * l.Lookups)
		}
	}
	e.touch(t, all)
}

// Plan asks the cache for b's decisions, as the plan stage does, and
// records the victims count the cache stages read.
func (e *Env) Plan(t testing.TB, b *batch.Batch) *cache.PlanResult {
	t.Helper()
	req := &cache.PlanRequest{Seq: b.Seq, TableOffsets: e.Set.Layout.IndexStart()}
	var err error
	for _, x := range []struct {
		name batch.Field
		dst  *region.Ref
	}{{batch.IDs, &req.IDs}, {batch.Slots, &req.Slots}, {batch.Hits, &req.Hits}, {batch.Victims, &req.Victims}} {
		if *x.dst, err = b.Ref(x.name); err != nil {
			t.Fatal(err)
		}
	}
	res, err := e.Set.Cache.Plan(context.Background(), req)
	if err != nil {
		t.Fatalf("plan batch %d: %v", b.Seq, err)
	}
	var misses int64
	for _, ts := range res.Tables {
		misses += ts.Misses
	}
	b.SetStat("misses", misses)
	b.SetStat("victims", res.Victims)
	return res
}

// SetPlan writes a hand-made plan into b: slots and hits per table (every
// position of the table's ID range) and the victims' (table, row, slot)
// triples.
func (e *Env) SetPlan(t testing.TB, b *batch.Batch, slots [][]int64, hits [][]byte, victims [][3]int64) {
	t.Helper()
	l := e.Set.Layout
	s, err := b.Int64s(batch.Slots)
	if err != nil {
		t.Fatal(err)
	}
	h, err := b.Bytes(batch.Hits)
	if err != nil {
		t.Fatal(err)
	}
	v, err := b.Int64s(batch.Victims)
	if err != nil {
		t.Fatal(err)
	}
	for tab := range slots {
		if len(slots[tab]) != l.IDsPerTable || len(hits[tab]) != l.IDsPerTable {
			t.Fatalf("table %d: plan for %d/%d positions, want %d", tab, len(slots[tab]), len(hits[tab]), l.IDsPerTable)
		}
		copy(s[tab*l.IDsPerTable:], slots[tab])
		copy(h[tab*l.IDsPerTable:], hits[tab])
	}
	for i, tr := range victims {
		copy(v[3*i:3*i+3], tr[:])
	}
	b.SetStat("victims", int64(len(victims)))
}

// Process runs one stage on b and fails the test on an error.
func Process(t testing.TB, s any, b *batch.Batch) {
	t.Helper()
	st, ok := s.(stage.Stage)
	if !ok {
		t.Fatalf("%T is not a stage.Stage", s)
	}
	if err := st.Process(context.Background(), b); err != nil {
		t.Fatalf("process batch %d: %v", b.Seq, err)
	}
}

// Create builds a stage of factory f with its defaults changed by edit
// (which may be nil), validating the config as the graph would.
func Create(t testing.TB, f stage.Factory, set stage.Settings, edit func(stage.Config)) (any, error) {
	t.Helper()
	cfg := f.CreateDefaultConfig()
	if edit != nil {
		edit(cfg)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return f.Create(context.Background(), set, cfg)
}

// MustCreate is Create with the factory's default config, failing t on an
// error: the stage under test, for a test that is not about its config.
func MustCreate(t testing.TB, f stage.Factory, set stage.Settings) any {
	t.Helper()
	s, err := Create(t, f, set, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Build loads the graph file at path, with sets applied as --set does,
// and checks it as flowrun validate does: graph.Build, then what only
// its plugins can judge (engine.Validate: the cache's Needs, the
// built-in plugins' options), with the built-in plugins the shipped
// graphs name. Errors are located in the file.
func Build(t testing.TB, kinds stage.Registry, path string, sets ...string) (*graph.Graph, error) {
	t.Helper()
	cfg, src, err := config.Load(path, sets)
	if err != nil {
		return nil, err
	}
	host := newHost(t)
	defer host.Close()
	g, err := graph.Build(cfg, src, kinds, pluginhost.RefChecker{Host: host})
	if err != nil {
		return nil, err
	}
	if err := engine.Validate(context.Background(), g, host); err != nil {
		return nil, src.Annotate(err)
	}
	return g, nil
}

// newHost is a plugin host with the built-in plugins the tests' graphs
// name: a test-only list (cmd/flowrun/components.go has the product's).
func newHost(t testing.TB) *pluginhost.Host {
	t.Helper()
	host, err := pluginhost.New(pluginhost.Settings{Builtins: pluginhost.Builtins{
		Caches: map[string]func() cache.Cache{
			"lru": lru.New, "lfu": lfu.New, "belady": belady.New, "none": none.New, "scratchpipe": scratchpipe.New, "static": static.New,
			"heca":                     heca.New,
			"mpcache":                  mpcache.New,
			"overclaiming-scratchpipe": func() cache.Cache { return overclaiming{scratchpipe.New()} },
			OnePassFIFO:                func() cache.Cache { return &onePassFIFO{} },
		},
		Kernels: map[string]func() kernel.Kernel{"cpu": cpu.New},
		Models:  map[string]func() model.Model{"logreg": logreg.New, "dlrm": dlrm.New},
		Devices: map[string]func() device.Device{"cpu-dram": cpudram.New, "hbm": hbm.New, "nmp-dimm": nmpdimm.New},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return host
}

// overclaiming is a policy that declares it holds the pipeline's windows
// whatever its own (builtin:overclaiming-scratchpipe: scratchpipe with
// past_window or future_window narrower than the pipeline's, declared
// held), as a buggy third-party policy might. The graph checks trust the
// declaration; the hazard checker (--check-hazards) is what catches it,
// and the tests of that checker need such a run.
type overclaiming struct{ cache.Cache }

func (o overclaiming) Needs(ctx context.Context, setup plugin.Setup) (cache.Needs, error) {
	needs, err := cache.NeedsOf(ctx, o.Cache, setup)
	needs.HoldsWindows = true
	return needs, err
}

// RunGraph runs the graph file at path, with sets applied as --set does,
// in process and wired as `flowrun run` wires it: the stage kinds given,
// the built-in plugins the shipped graphs name, an embedded NATS server,
// hazards as --check-hazards. It returns the error of loading, building or
// running the graph.
func RunGraph(t testing.TB, kinds stage.Registry, path string, hazards engine.HazardMode, sets ...string) (*results.Results, error) {
	t.Helper()
	cfg, src, err := config.Load(path, sets)
	if err != nil {
		return nil, err
	}
	g, err := graph.Build(cfg, src, kinds, nil)
	if err != nil {
		return nil, err
	}
	host := newHost(t)
	defer host.Close()
	srv, err := bus.StartEmbedded(bus.ServerOptions{Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	conn, err := bus.Connect(srv.ClientURL(), srv.Auth())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return engine.Run(context.Background(), engine.Options{
		Graph: g, Stages: kinds, Plugins: host, Bus: conn, CheckHazards: hazards,
	})
}
