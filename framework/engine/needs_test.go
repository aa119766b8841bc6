package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/engine"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// The host asks a cache policy what it needs (sdk/cache.Needs) and never
// its name: these tests use a policy of their own, fakePolicy, which
// declares whatever NeedsF says.

// fakePolicy is a cache policy that declares its Needs (cache.Declarer)
// and records what the host asked and configured.
type fakePolicy struct {
	NeedsF func(plugin.Setup) (cache.Needs, error)

	mu         sync.Mutex
	asked      []map[string]any // options of each Needs call
	configured []map[string]any // options of each Configure call
}

func (p *fakePolicy) Info(context.Context) (plugin.Info, error) {
	return plugin.Info{Kind: plugin.KindCache, Name: "fake"}, nil
}

func (p *fakePolicy) Configure(_ context.Context, s plugin.Setup) error {
	var opts map[string]any
	if err := plugin.DecodeOptions(s.Options, &opts); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.configured = append(p.configured, opts)
	return nil
}

func (p *fakePolicy) Plan(context.Context, *cache.PlanRequest) (*cache.PlanResult, error) {
	return &cache.PlanResult{}, nil
}

func (p *fakePolicy) Needs(_ context.Context, s plugin.Setup) (cache.Needs, error) {
	var opts map[string]any
	if err := plugin.DecodeOptions(s.Options, &opts); err != nil {
		return cache.Needs{}, err
	}
	p.mu.Lock()
	p.asked = append(p.asked, opts)
	p.mu.Unlock()
	return p.NeedsF(s)
}

// policyHost is the test host with every cache reference resolved to the
// fake policy.
type policyHost struct {
	engine.PluginOpener
	policy *fakePolicy
}

func (h policyHost) Cache(context.Context, string) (cache.Cache, error) { return h.policy, nil }

// storeConfig is the options of a test stage that works on Storage and
// serves the pipeline's windows, as ScratchPipe's stages do.
type storeConfig struct {
	Past   int `mapstructure:"past"`
	Future int `mapstructure:"future"`
}

func (c *storeConfig) Validate() error             { return nil }
func (c *storeConfig) UsesStorage() bool           { return true }
func (c *storeConfig) Windows() (past, future int) { return c.Past, c.Future }

type store struct{}

func (store) Process(context.Context, *batch.Batch) error { return nil }

// storageGraph builds a gen → store graph over the tiny dataset, with
// extra top-level keys.
func storageGraph(t *testing.T, extra string) *graph.Graph {
	g, _ := storageGraphKinds(t, extra)
	return g
}

// storageGraphKinds is storageGraph with its stage kinds, for a run.
func storageGraphKinds(t *testing.T, extra string) (*graph.Graph, stage.Registry) {
	t.Helper()
	reg, err := stage.NewRegistry(
		stage.NewFactory("gen",
			func() stage.Config { return &genConfig{Batches: 4} },
			func(_ context.Context, set stage.Settings, cfg stage.Config) (any, error) {
				return &gen{common: common{name: set.Name, rec: newRecorder()}, n: cfg.(*genConfig).Batches}, nil
			},
			stage.AsSource()),
		stage.NewFactory("store",
			func() stage.Config { return &storeConfig{Past: 3, Future: 2} },
			func(context.Context, stage.Settings, stage.Config) (any, error) { return store{}, nil }),
	)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "graph.yaml")
	doc := "name: needs-test\n" + extra + tinyDataset + `stages:
  gen:
    kind: gen
    out: [batches]
  store:
    kind: store
    in: batches
`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, src, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Build(cfg, src, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g, reg
}

// withPolicy is the test host with the fake policy declaring needs.
func withPolicy(t *testing.T, needs func(plugin.Setup) (cache.Needs, error)) (policyHost, *fakePolicy) {
	p := &fakePolicy{NeedsF: needs}
	return policyHost{host(t), p}, p
}

// declares is a NeedsF that declares n.
func declares(n cache.Needs) func(plugin.Setup) (cache.Needs, error) {
	return func(plugin.Setup) (cache.Needs, error) { return n, nil }
}

// A pipelined graph with Storage is refused when the policy does not
// declare that it holds the windows; sequentially, or when it does, it
// passes.
func TestValidateAsksWhetherThePolicyHoldsTheWindows(t *testing.T) {
	t.Parallel()
	h, _ := withPolicy(t, declares(cache.Needs{}))
	err := engine.Validate(context.Background(), storageGraph(t, ""), h)
	if err == nil || !strings.Contains(err.Error(), "cache::plugin: builtin:lru holds no pipeline window") {
		t.Errorf("pipelined, no window held: %v", err)
	}
	if err := engine.Validate(context.Background(), storageGraph(t, "pipeline: sequential\n"), h); err != nil {
		t.Errorf("sequential: %v", err)
	}
	h, _ = withPolicy(t, declares(cache.Needs{HoldsWindows: true}))
	if err := engine.Validate(context.Background(), storageGraph(t, ""), h); err != nil {
		t.Errorf("windows held: %v", err)
	}
}

// A policy that never bypasses needs the worst case of the window it
// holds, its own when wider than the pipeline's.
func TestValidateChecksTheWorstCaseOfAPolicyThatNeverBypasses(t *testing.T) {
	t.Parallel()
	g := storageGraph(t, "cache:\n  size: 100\n")
	h, _ := withPolicy(t, declares(cache.Needs{HoldsWindows: true, NeverBypasses: true, Past: 4}))
	err := engine.Validate(context.Background(), g, h)
	// 2 tables × 8 samples × 8 lookups (the default) × (4 + 1 + 2).
	for _, want := range []string{"cache::size", "(past_window 4 + 1 + future_window 2)", "cache.size ≥ 448"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q in it", err, want)
		}
	}
	h, _ = withPolicy(t, declares(cache.Needs{HoldsWindows: true}))
	if err := engine.Validate(context.Background(), g, h); err != nil {
		t.Errorf("a policy that may bypass: %v", err)
	}
}

// Validate asks the Needs with the options a run gives (the host's
// windows and capacity), never configures the cache and makes no
// profile, even for a policy that asks for one; a bad option comes back
// at its key.
func TestValidateHasNoSideEffects(t *testing.T) {
	t.Parallel()
	g := storageGraph(t, "cache:\n  options:\n    victim: lru\n")
	h, p := withPolicy(t, declares(cache.Needs{HoldsWindows: true, ProfileBatches: 2}))
	if err := engine.Validate(context.Background(), g, h); err != nil {
		t.Fatal(err)
	}
	if len(p.configured) != 0 {
		t.Errorf("validate configured the cache: %v", p.configured)
	}
	if len(p.asked) != 1 {
		t.Fatalf("asked %d times, want once", len(p.asked))
	}
	opts := p.asked[0]
	if opts["past"] != 3.0 || opts["future"] != 2.0 || opts["capacity"] == nil || opts["victim"] != "lru" || opts["frequencies"] != nil {
		t.Errorf("asked with %v, want the graph's options, the windows and capacity, no frequencies", opts)
	}

	h, _ = withPolicy(t, func(plugin.Setup) (cache.Needs, error) {
		return cache.Needs{}, plugin.FieldErrorf("victim", "want lru or random")
	})
	err := engine.Validate(context.Background(), g, h)
	if err == nil || !strings.Contains(err.Error(), "cache::options::victim: ") {
		t.Errorf("err = %v, want it at cache::options::victim", err)
	}
}

// A run profiles the data only for a policy that asks, at most its
// training batches, and hands the profile over as "frequencies".
func TestRunProfilesWhatThePolicyAsks(t *testing.T) {
	t.Parallel()
	configured := func(n cache.Needs) map[string]any {
		g, reg := storageGraphKinds(t, "")
		h, p := withPolicy(t, declares(n))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := engine.Run(ctx, engine.Options{Graph: g, Stages: reg, Plugins: h, Bus: conn(t)}); err != nil {
			t.Fatal(err)
		}
		if len(p.configured) != 1 {
			t.Fatalf("configured %d times, want once", len(p.configured))
		}
		return p.configured[0]
	}
	if f := configured(cache.Needs{HoldsWindows: true})["frequencies"]; f != nil {
		t.Errorf("frequencies %v for a policy that asked for none", f)
	}
	length := func(n int) any {
		f, ok := configured(cache.Needs{HoldsWindows: true, ProfileBatches: n})["frequencies"].(map[string]any)
		if !ok {
			t.Fatalf("no frequencies for ProfileBatches %d", n)
		}
		return f["length"]
	}
	if all, capped := length(4), length(1000); all != capped {
		t.Errorf("profile of 1000 batches is %v bytes, of the run's 4 %v: want it capped at the run's", capped, all)
	}
	if one, all := length(1), length(4); one == all {
		t.Errorf("profile of 1 batch is as long as of 4 (%v bytes)", one)
	}
}
