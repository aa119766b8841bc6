package graph

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/config/configtest"
	"github.com/flowrun/flowrun/framework/data"
)

// The fake stage kinds: small typed configs decoded like a real factory's.

type loadConfig struct {
	Device string `mapstructure:"device"`
}

func (c *loadConfig) DeviceNames() []string { return []string{c.Device} }

type window struct {
	Past   int `mapstructure:"past"`
	Future int `mapstructure:"future"`
}

type planConfig struct {
	Window window `mapstructure:"window"`
}

func (c *planConfig) Validate() error {
	var errs []error
	if c.Window.Past < 0 {
		errs = append(errs, config.At("window::past", fmt.Errorf("must be ≥ 0, got %d", c.Window.Past)))
	}
	if c.Window.Future < 0 {
		errs = append(errs, config.At("window::future", fmt.Errorf("must be ≥ 0, got %d", c.Window.Future)))
	}
	return errors.Join(errs...)
}

type trainConfig struct {
	Device        string  `mapstructure:"device"`
	ComputeDevice string  `mapstructure:"compute_device"`
	LR            float64 `mapstructure:"lr"`
	// Cached reads the plan's misses, as the real train with source:
	// storage reads its slots: a field that depends on the options.
	Cached bool `mapstructure:"cached"`
}

func (c *trainConfig) DeviceNames() []string {
	if c.ComputeDevice == "" {
		return []string{c.Device}
	}
	return []string{c.Device, c.ComputeDevice}
}

type fakeKinds struct{}

var defaults = map[string]func() any{
	"load":  func() any { return &loadConfig{Device: "host"} },
	"plan":  func() any { return &planConfig{Window: window{Past: 3, Future: 2}} },
	"train": func() any { return &trainConfig{Device: "gpu", LR: 0.01} },
}

func (fakeKinds) Known(kind string) bool    { return defaults[kind] != nil }
func (fakeKinds) Names() []string           { return []string{"train", "plan", "load"} }
func (fakeKinds) IsSource(kind string) bool { return kind == "load" }
func (fakeKinds) DecodeOptions(kind string, options map[string]any) (any, error) {
	// Validate even when decoding failed: a key that did not decode kept
	// its default, and the user should see every error at once.
	cfg := defaults[kind]()
	err := config.Decode(options, cfg)
	if v, ok := cfg.(interface{ Validate() error }); ok {
		err = errors.Join(err, v.Validate())
	}
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// The fake kinds' batch fields: load makes the IDs, plan counts misses,
// train reads the IDs and, cached, the misses. (Plan reads nothing, so that
// testdata/good/feedback.yaml's plan, fed only through feedback, is good.)
var (
	fakeIDs    = batch.NewArray[int64]("ids", batch.Shape.IDs)
	fakeMisses = batch.NewStat("misses")
)

func (fakeKinds) Fields(kind string, options any) (produces, consumes []batch.Field) {
	switch kind {
	case "load":
		return []batch.Field{fakeIDs}, nil
	case "plan":
		return []batch.Field{fakeMisses}, nil
	case "train":
		if options.(*trainConfig).Cached {
			return nil, []batch.Field{fakeIDs, fakeMisses}
		}
		return nil, nil
	}
	return nil, nil
}

// fakePlugins knows every plugin but those it lists as missing.
type fakePlugins struct {
	missing []string
	checked []string
}

func (p *fakePlugins) Check(kind, ref string) error {
	p.checked = append(p.checked, kind+"="+ref)
	if slices.Contains(p.missing, ref) {
		return fmt.Errorf("plugin %q not found", ref)
	}
	return nil
}

func build(t *testing.T, path string, sets ...string) (*Graph, error) {
	t.Helper()
	cfg, src, err := config.Load(path, sets)
	if err != nil {
		return nil, err
	}
	plugins := &fakePlugins{missing: []string{"builtin:dlrm-xl", "builtin:missing", "testdata/bad/bin/tpu", "builtin:gpu"}}
	return Build(cfg, src, fakeKinds{}, plugins)
}

func names(nodes []Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}

func TestBuildLinear(t *testing.T) {
	g, err := build(t, "testdata/good/linear.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(g.Nodes), []string{"load", "plan", "train"}; !reflect.DeepEqual(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
	if got := names(g.Sources()); !reflect.DeepEqual(got, []string{"load"}) {
		t.Errorf("Sources = %v", got)
	}
	if got := names(g.Sinks()); !reflect.DeepEqual(got, []string{"train"}) {
		t.Errorf("Sinks = %v", got)
	}
	want := map[string]Subject{
		"batches": {Name: "batches", Producer: "load", Consumer: "plan"},
		"planned": {Name: "planned", Producer: "plan", Consumer: "train"},
	}
	if !reflect.DeepEqual(g.Subjects, want) {
		t.Errorf("Subjects = %+v, want %+v", g.Subjects, want)
	}
	plan, ok := g.Node("plan")
	if !ok || !reflect.DeepEqual(plan.Options, &planConfig{Window: window{Past: 3, Future: 2}}) {
		t.Errorf("plan options = %#v", plan.Options)
	}
	train, _ := g.Node("train")
	if !reflect.DeepEqual(train.Options, &trainConfig{Device: "gpu", LR: 0.01}) {
		t.Errorf("train options not decoded over the defaults: %#v", train.Options)
	}
	if g.Config == nil || g.Config.Dataset.Rows != 1000 {
		t.Error("Graph.Config not kept")
	}
}

func TestBuildFeedbackCycleAccepted(t *testing.T) {
	g, err := build(t, "testdata/good/feedback.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// load is the source; plan is fed only through the feedback edge, so
	// it is ready at once and comes next by name after eval.
	if got, want := names(g.Nodes), []string{"load", "eval", "plan", "train"}; !reflect.DeepEqual(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
	if s := g.Subjects["trained"]; !s.Feedback || s.Producer != "train" || s.Consumer != "plan" {
		t.Errorf("trained = %+v, want a feedback subject from train to plan", s)
	}
	if g.Subjects["planned"].Feedback {
		t.Error("planned is not feedback")
	}
}

func TestBuildDeterministicOrder(t *testing.T) {
	for i := 0; i < 20; i++ {
		g, err := build(t, "testdata/good/ties.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := names(g.Nodes), []string{"a_load", "b_load", "y", "z"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("order = %v, want %v", got, want)
		}
	}
}

func TestBuildChecksEveryPlugin(t *testing.T) {
	cfg, src, err := config.Load("testdata/good/linear.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &fakePlugins{}
	if _, err := Build(cfg, src, fakeKinds{}, p); err != nil {
		t.Fatal(err)
	}
	want := []string{"model=builtin:logreg", "kernel=builtin:cpu", "cache=builtin:lru", "device=builtin:hbm", "device=builtin:cpu-dram"}
	if !reflect.DeepEqual(p.checked, want) {
		t.Errorf("checked %v, want %v", p.checked, want)
	}
	// Without a plugin checker the graph still builds.
	if _, err := Build(cfg, src, fakeKinds{}, nil); err != nil {
		t.Errorf("Build with nil Plugins: %v", err)
	}
	if _, err := Build(nil, src, fakeKinds{}, nil); err == nil {
		t.Error("Build(nil config) should fail")
	}
	if _, err := Build(cfg, src, nil, nil); err == nil {
		t.Error("Build(nil kinds) should fail")
	}
}

// optionPlugins is a Plugins that also tries options (PluginOptions): it
// rejects them with err, and records the graphs it was given.
type optionPlugins struct {
	fakePlugins
	err  error
	seen []*Graph
}

func (p *optionPlugins) CheckOptions(g *Graph) error {
	p.seen = append(p.seen, g)
	return p.err
}

func TestBuildChecksPluginOptionsLast(t *testing.T) {
	load := func(sets ...string) (*config.Config, *config.Source) {
		t.Helper()
		cfg, src, err := config.Load("testdata/good/linear.yaml", sets)
		if err != nil {
			t.Fatal(err)
		}
		return cfg, src
	}

	// On a sound graph, CheckOptions is given the built graph, and a
	// graph whose options it accepts builds.
	cfg, src := load()
	p := &optionPlugins{}
	g, err := Build(cfg, src, fakeKinds{}, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.seen) != 1 || p.seen[0] != g {
		t.Fatalf("CheckOptions given %v, want the built graph once", p.seen)
	}
	if got := names(g.Nodes); !reflect.DeepEqual(got, []string{"load", "plan", "train"}) {
		t.Errorf("the graph CheckOptions was given has nodes %v", got)
	}

	// Its errors are Build's, located in the file like Build's own.
	p = &optionPlugins{err: errors.Join(
		config.At("dataset::rows", errors.New("too few for the fake plugin")),
		config.At("model::options::preset", errors.New("no such preset")),
	)}
	cfg, src = load("model.options.preset=rm9")
	if g, err := Build(cfg, src, fakeKinds{}, p); g != nil || err == nil {
		t.Fatalf("Build = %v, %v, want the options' errors", g, err)
	} else {
		for _, want := range []string{
			"linear.yaml:3: dataset::rows: too few for the fake plugin",
			"linear.yaml: model::options::preset: no such preset (from --set model.options.preset=rm9)",
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("no %q in:\n%v", want, err)
			}
		}
	}

	// On a graph with other problems, options are not tried: the cache's
	// Setup depends on the built graph.
	p = &optionPlugins{err: errors.New("must not be reported")}
	cfg, src = load("stages.load.out=[batches,extra]")
	_, err = Build(cfg, src, fakeKinds{}, p)
	if err == nil || strings.Contains(err.Error(), "must not be reported") || len(p.seen) != 0 {
		t.Errorf("CheckOptions called on an unsound graph (%d times): %v", len(p.seen), err)
	}
}

func TestBuildSet(t *testing.T) {
	// --set can rewire a graph: here into a dangling output.
	_, err := build(t, "testdata/good/linear.yaml", "stages.load.out=[batches,extra]")
	if err == nil || !strings.Contains(err.Error(), `linear.yaml: stages::load::out::1: dangling output: no stage reads subject "extra" (make it some stage's in, or remove it from out) (from --set stages.load.out=[batches,extra])`) {
		t.Fatalf("got %v", err)
	}
	// A stage option set on the command line reaches the kind's decoder.
	_, err = build(t, "testdata/good/linear.yaml", "stages.plan.window.past=-4")
	if err == nil || !strings.Contains(err.Error(), "stages::plan::window::past: must be ≥ 0, got -4 (from --set stages.plan.window.past=-4)") {
		t.Fatalf("got %v", err)
	}
}

// TestBuildBad builds every file under testdata/bad. Each lists the errors
// it must produce in `# want: SUBSTRING` comments, one per error: each want
// must match an error, and there must be no other.
func TestBuildBad(t *testing.T) {
	configtest.BadFiles(t, "testdata/bad/*.yaml", func(t *testing.T, file string) error {
		g, err := build(t, file)
		if g != nil {
			t.Error("Build returned a graph with errors")
		}
		return err
	}, func(t *testing.T, e *config.Error) {
		// Every error is located in the file.
		if e.Line == 0 || e.Path == "" {
			t.Errorf("error not located: %#v", e)
		}
	})
}

// A graph that reads a batch file (dataset.kind file) is checked against
// the file before anything runs; every problem is located at the dataset
// key to change.
func TestBuildChecksTheBatchFile(t *testing.T) {
	dir := t.TempDir()
	d := config.Default().Dataset
	d.Batches, d.BatchSize, d.EvalBatches, d.Rows = 2, 8, 1, 1000
	good := filepath.Join(dir, "good.frb")
	if _, err := data.WriteSynthetic(good, 1, d, nil); err != nil {
		t.Fatal(err)
	}
	notBatch := filepath.Join(dir, "ratings.csv")
	if err := os.WriteFile(notBatch, []byte("userId,movieId,rating,timestamp\n1,2,3.5,4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	graph := func(path string, tables int) string {
		t.Helper()
		file := filepath.Join(dir, "g.yaml")
		yaml := fmt.Sprintf("dataset:\n  kind: file\n  path: %s\n  batches: 2\n  batch_size: 8\n  eval_batches: 1\n  rows: 1000\n  tables: %d\n"+
			"stages:\n  load: {kind: load, out: [batches]}\n  train: {kind: train, in: batches}\n", path, tables)
		if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	if _, err := build(t, graph(good, d.Tables)); err != nil {
		t.Fatalf("the graph's own file: %v", err)
	}
	for _, c := range []struct {
		name, path string
		tables     int
		want       string
	}{
		{"missing", filepath.Join(dir, "missing.frb"), d.Tables, "g.yaml:3: dataset::path: no batch file"},
		{"not a batch file", notBatch, d.Tables, "g.yaml:3: dataset::path: " + notBatch + ": offset 0: not a flowrun batch file"},
		{"another shape", good, d.Tables + 1, fmt.Sprintf("g.yaml:8: dataset::tables: the file %s has %d tables, the graph %d", good, d.Tables, d.Tables+1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := graph(c.path, c.tables)
			_, err := build(t, file)
			errs := config.Errors(err)
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), c.want) {
				t.Fatalf("got %v, want one error %q", err, c.want)
			}
		})
	}
}

func TestCycles(t *testing.T) {
	succ := map[string][]string{
		"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, // a → b → c → a
		"d": {"d"},           // self-loop
		"e": {"f"}, "f": nil, // acyclic
	}
	got := cycles([]string{"a", "b", "c", "d", "e", "f"}, succ)
	want := [][]string{{"a", "b", "c", "a"}, {"d", "d"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cycles = %v, want %v", got, want)
	}
}
