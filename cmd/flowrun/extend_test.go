package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/bus"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/engine"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/plankit"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// This file adds a cache policy and a stage kind the way docs/architecture.md
// says to, through public packages only: each is the code of the component
// plus one line in the registration lists (components.go's stages() and
// builtins(), here extended in the test). The framework learns what it needs
// from their declarations: the policy's Needs, the stage's batch fields.

// mru evicts the most recently used slot the batch does not hold: a policy
// no paper asks for, on sdk/cache/plankit.
type mru struct {
	plankit.Guard
	plankit.Windowless // declares zero Needs: it holds no pipeline window
	tables             []*mruTable
	clock              uint64
}

type mruTable struct {
	plankit.Slots
	free  *plankit.SlotHeap // un-held slots, most recently used first
	used  []uint64
	held  []int32
	clock *uint64
}

func (tb *mruTable) Resident() *plankit.Slots { return &tb.Slots }
func (tb *mruTable) Tick()                    { *tb.clock++ }
func (tb *mruTable) Victim() (int32, bool)    { return tb.free.Pop() }
func (tb *mruTable) Insert(s int32)           { tb.touch(s) }
func (tb *mruTable) Hit(s int32) {
	if tb.free.Remove(s) {
		tb.touch(s)
	}
}
func (tb *mruTable) touch(s int32) { tb.used[s] = *tb.clock; tb.held = append(tb.held, s) }

func (tb *mruTable) Release() {
	for _, s := range tb.held {
		tb.free.Push(s, plankit.Key{Major: ^tb.used[s]}) // newest pops first
	}
	tb.held = tb.held[:0]
}

func (p *mru) Info(context.Context) (plugin.Info, error) {
	return plankit.Info("mru", "0.0.1", "most recently used eviction (a test of adding a policy)", plankit.HostFields()), nil
}

func (p *mru) Configure(_ context.Context, setup plugin.Setup) error {
	var o plankit.HostOptions
	if err := plankit.Decode(setup, &o); err != nil {
		return err
	}
	tables, err := plankit.PerTable(o.Capacity, setup.Tables, func(_ int, c int32) *mruTable {
		return &mruTable{Slots: plankit.NewSlots(c), free: plankit.NewSlotHeap(c), used: make([]uint64, c), clock: &p.clock}
	})
	if err != nil {
		return err
	}
	p.Guard.Configure(setup.Tables, func() { p.tables, p.clock = tables, 0 })
	return nil
}

func (p *mru) Plan(_ context.Context, req *cache.PlanRequest) (*cache.PlanResult, error) {
	return p.Guard.Plan("mru", req, func(b *cache.Batch) (*cache.PlanResult, error) {
		return plankit.TwoPass(b, p.tables), nil
	})
}

// tally counts a batch's cache hits from the plan's hits array into a
// stat and a run figure of its own: a stage kind that consumes what
// another produces, declared, never named.
var tallyHits = batch.NewStat("tally_hits")

type tallyConfig struct{}

func (*tallyConfig) Validate() error { return nil }

type tally struct {
	set   stage.Settings
	total float64
}

func (t *tally) Process(_ context.Context, b *batch.Batch) error {
	if b.Eval {
		return nil // the cache statistics count training batches
	}
	hits, err := batch.Hits.View(b)
	if err != nil {
		return err
	}
	var n int64
	for _, h := range hits {
		n += int64(h)
	}
	tallyHits.Set(b, n)
	t.total += float64(n)
	t.set.Metrics.Set("tally_hits", t.total)
	return nil
}

func tallyFactory() stage.Factory {
	return stage.New("tally", tallyConfig{},
		func(_ context.Context, set stage.Settings, _ *tallyConfig) (any, error) { return &tally{set: set}, nil },
		stage.WithFields([]batch.Field{tallyHits}, []batch.Field{batch.Hits}))
}

// extended is the product's registration lists plus the two lines a new
// policy and a new stage kind add.
func extended(t *testing.T) (stage.Registry, pluginhost.Builtins) {
	t.Helper()
	kinds := stages()
	kinds["tally"] = tallyFactory()
	b := builtins()
	b.Caches["mru"] = func() cache.Cache { return &mru{} }
	return kinds, b
}

// demoWithTally is graphs/demo.yaml with the tally stage between plan and
// exchange (or, before, between load and plan) and the mru policy.
func demoWithTally(t *testing.T, before bool) string {
	t.Helper()
	data, err := os.ReadFile(demo)
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(data), "plugin: builtin:lru", "plugin: builtin:mru", 1)
	from, to := "planned", "tallied"
	if before {
		from, to = "batches", "counted"
		doc = strings.Replace(doc, "in: batches\n", "in: counted\n", 1)
	} else {
		doc = strings.Replace(doc, "in: planned\n", "in: tallied\n", 1)
	}
	doc = strings.Replace(doc, "stages:\n", "stages:\n  tally:\n    kind: tally\n    in: "+from+"\n    out: ["+to+"]\n", 1)
	path := filepath.Join(t.TempDir(), "demo-tally.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runExtended loads, builds, validates and runs path with the extended
// lists, as flowrun run does.
func runExtended(t *testing.T, path string, sets ...string) (*results.Results, error) {
	t.Helper()
	kinds, builtins := extended(t)
	return runIn(t, kinds, builtins, path, sets...)
}

// runIn loads, builds, validates and runs path with the given lists, in
// process, as flowrun run does.
func runIn(t *testing.T, kinds stage.Registry, builtins pluginhost.Builtins, path string, sets ...string) (*results.Results, error) {
	t.Helper()
	host, err := pluginhost.New(pluginhost.Settings{Builtins: builtins})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	cfg, src, err := config.Load(path, sets)
	if err != nil {
		return nil, err
	}
	g, err := graph.Build(cfg, src, kinds, pluginhost.RefChecker{Host: host})
	if err != nil {
		return nil, err
	}
	if err := engine.Validate(context.Background(), g, host); err != nil {
		return nil, src.Annotate(err)
	}
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
	return engine.Run(context.Background(), engine.Options{Graph: g, Stages: kinds, Plugins: host, Bus: conn})
}

// TestAddAPolicyAndAStageKind: the new policy and stage kind run in the
// demo and end with the demo's digest (the policy only moves rows); the
// stage kind's declared input without a producer upstream is refused
// before anything runs, naming both stages; the policy, which declares no
// window, is refused in a pipelined graph with Storage.
func TestAddAPolicyAndAStageKind(t *testing.T) {
	t.Parallel()
	res, err := runExtended(t, demoWithTally(t, false))
	if err != nil {
		t.Fatal(err)
	}
	if want := wantDemoDigest(t); res.Digest != want {
		t.Errorf("digest with mru and tally %s, demo's %s", res.Digest, want)
	}
	if res.Cache == nil || res.Cache.Hits == 0 {
		t.Fatalf("cache statistics %+v, want hits", res.Cache)
	}
	if got := res.Metrics.Extra["tally_hits"]; got != float64(res.Cache.Hits) {
		t.Errorf("tally counted %g hits, the cache %d", got, res.Cache.Hits)
	}

	_, err = runExtended(t, demoWithTally(t, true))
	for _, want := range []string{`stage "tally" consumes array "hits"`, "no stage upstream produces it", `"plan"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("tally before plan: err = %v, want it to name %q", err, want)
		}
	}

	data, err := os.ReadFile(filepath.Join(repoGraphs, "scratchpipe.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pipelined := filepath.Join(t.TempDir(), "scratchpipe-mru.yaml")
	doc := strings.Replace(string(data), "plugin: builtin:scratchpipe\n  size: 0.05\n  options:\n    victim: lru\n", "plugin: builtin:mru\n  size: 0.05\n", 1)
	if err := os.WriteFile(pipelined, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = runExtended(t, pipelined)
	if want := "cache::plugin: builtin:mru holds no pipeline window"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("mru in a pipelined graph with Storage: err = %v, want %q", err, want)
	}
}
