package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestDefault(t *testing.T) {
	d := Default()
	if d.Seed != 1 || d.Dataset.Batches != 20 || d.Dataset.BatchSize != 256 || d.Dataset.Rows != 100000 ||
		d.Dataset.Locality != "zipf" || d.Cache.Size != 0.05 || d.NATS.Credits != 2 || d.Tracing.Exporter != "none" ||
		d.Devices["gpu"].Plugin != "builtin:hbm" || len(d.Stages) != 0 {
		t.Fatalf("unexpected defaults: %+v", d)
	}
	// The defaults are valid except that a graph must bring its stages.
	errs := Errors(d.Validate())
	if len(errs) != 1 || errs[0].Path != "stages" {
		t.Fatalf("Default().Validate() = %v, want only the missing stages", errs)
	}
	// Each call returns fresh maps: decoding one must not change another.
	d.Devices["tpu"] = PluginRef{Plugin: "x"}
	if _, ok := Default().Devices["tpu"]; ok {
		t.Fatal("Default shares its maps between calls")
	}
}

func TestLoadGood(t *testing.T) {
	cfg, src, err := Load("testdata/good.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Name != "good" {
		t.Errorf("Name = %q, want the file's base name", cfg.Name)
	}
	// Set in the file; a plugin binary's relative path is resolved
	// against the file's directory.
	if cfg.Seed != 42 || cfg.Dataset.Batches != 10 || cfg.Dataset.Locality != "high" || cfg.Cache.Size != 100 ||
		cfg.Devices["gpu"].Plugin != filepath.Join("testdata", "bin", "v100") || cfg.Model.Options["preset"] != "scratchpipe" {
		t.Errorf("file values not decoded: %+v", cfg)
	}
	// Left to the defaults.
	if cfg.Dataset.Dim != 16 || cfg.Dataset.ZipfS != 1.05 || cfg.Kernel.Plugin != "builtin:cpu" || cfg.NATS.Credits != 2 {
		t.Errorf("defaults lost: %+v", cfg)
	}
	load := cfg.Stages["load"]
	if load.Kind != "load" || !reflect.DeepEqual(load.Out, []string{"batches"}) {
		t.Errorf("a scalar out should be a one-subject list: %+v", load)
	}
	train := cfg.Stages["train"]
	if train.In != "batches" || train.Options["device"] != "gpu" {
		t.Errorf("stage options should stay in Options: %+v", train)
	}
	if got := src.Line("stages::train::window::past"); got != 34 {
		t.Errorf("Line(stages::train::window::past) = %d, want 34", got)
	}
}

func TestLoadSet(t *testing.T) {
	cfg, _, err := Load("testdata/good.yaml", []string{
		"seed=7",
		"dataset.locality=uniform",
		"cache.size=0.1",
		"stages.load.out=[a,b]",
		"name=007",                    // a string key keeps the text as it is
		"stages.train.window.past=4",  // a stage option: not checked here
		"stages::train::in=batches.x", // "::" lets keys contain dots
		"DATASET.BATCHES=3",           // keys are case-insensitive
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Seed != 7 || cfg.Dataset.Locality != "uniform" || cfg.Cache.Size != 0.1 || cfg.Name != "007" ||
		cfg.Dataset.Batches != 3 || cfg.Stages["train"].In != "batches.x" {
		t.Errorf("sets not applied: %+v", cfg)
	}
	if !reflect.DeepEqual(cfg.Stages["load"].Out, []string{"a", "b"}) {
		t.Errorf("out = %v, want [a b]", cfg.Stages["load"].Out)
	}
	if w := cfg.Stages["train"].Options["window"].(map[string]any)["past"]; w != 4 {
		t.Errorf("window.past = %v, want 4", w)
	}
	// The echo for results.json is the graph as read, overrides applied.
	if e := cfg.Echo; e["seed"] != 7 || e["name"] != "007" || e["dataset"].(map[string]any)["batches"] != 3 ||
		e["stages"].(map[string]any)["train"].(map[string]any)["in"] != "batches.x" {
		t.Errorf("echo without the sets: %v", e)
	}
}

func TestLoadBadSet(t *testing.T) {
	for _, tc := range []struct {
		set  string
		want string
	}{
		{"seed", "--set seed: want key=value"},
		{"=3", "--set =3: want key=value"},
		{"colour=blue", `--set colour=blue: unknown key "colour" (allowed: cache, dataset`},
		{"dataset.colour=blue", `--set dataset.colour=blue: unknown key "colour" (allowed under dataset: batch_size`},
		{"dataset.batches.x=1", "dataset.batches is an integer and has no key"},
		{"stages.load.out.0=a", "stages.load.out is a list: set it whole"},
		{"dataset..rows=1", "has an empty part"},
		{"stages.load.out=[a,", "is not valid YAML"},
		{"dataset.rows=", "dataset.rows needs a value"},
		{"dataset.rows=many", `good.yaml: dataset::rows: must be an integer, got the string "many" (from --set dataset.rows=many)`},
		{"cache.size=5000", "good.yaml: cache::size: a cache of 5000 rows is larger than a table (dataset.rows = 1000); use at most 1000 rows or a fraction below 1 (from --set cache.size=5000)"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			_, _, err := Load("testdata/good.yaml", []string{tc.set})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load with --set %s = %v, want an error containing %q", tc.set, err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "testdata/good.yaml: ") {
				t.Errorf("a --set error has no line: %v", err)
			}
		})
	}
	// An unknown key is recognisable.
	_, _, err := Load("testdata/good.yaml", []string{"colour=blue"})
	if !errors.Is(err, ErrUnknownKey) {
		t.Errorf("errors.Is(%v, ErrUnknownKey) = false", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, src, err := Load("testdata/nope.yaml", nil)
	if err == nil || src != nil || !strings.Contains(err.Error(), "testdata/nope.yaml: read graph:") {
		t.Fatalf("Load(missing) = %v, %v", src, err)
	}
}

func TestLoadEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.yaml")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := Load(path, []string{"stages.load.kind=load", "stages.load.out=b"})
	if err != nil {
		t.Fatalf("an empty file with stages set should be the defaults: %v", err)
	}
	if cfg.Name != "empty" || cfg.Dataset.Batches != 20 {
		t.Errorf("unexpected config %+v", cfg)
	}
}

func TestSourceLine(t *testing.T) {
	src, err := parseSource("g.yaml", []byte(`
defaults: &d
  plugin: builtin:lru
  size: 0.1
cache:
  <<: *d
  size: 0.2
stages:
  Plan:
    out: [a,
      b]
`))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{
		"cache::size":          7, // written here, not the merged one
		"cache::plugin":        3, // merged from the anchor
		"stages::plan":         9, // case-insensitive, like viper
		"STAGES::Plan::out":    10,
		"stages::plan::out::1": 11,
		"stages::plan::in":     9, // absent: the nearest ancestor
		"tracing::exporter":    0, // nothing in the file
	} {
		if got := src.Line(path); got != want {
			t.Errorf("Line(%q) = %d, want %d", path, got, want)
		}
	}
	var nilSrc *Source
	if nilSrc.Line("seed") != 0 {
		t.Error("a nil Source knows no lines")
	}
}

func TestSourceCaseDuplicate(t *testing.T) {
	_, err := parseSource("g.yaml", []byte("stages:\n  plan: {}\n  Plan: {}\n"))
	if err == nil || !strings.Contains(err.Error(), `g.yaml:3: stages::plan: key "Plan" differs only in case from "plan" at line 2`) {
		t.Fatalf("got %v", err)
	}
	_, err = parseSource("g.yaml", []byte("- a\n- b\n"))
	if err == nil || !strings.Contains(err.Error(), "g.yaml:1: a graph file is a mapping") {
		t.Fatalf("got %v", err)
	}
}

func TestErrorFormat(t *testing.T) {
	base := errors.New("must be ≥ 0")
	for _, tc := range []struct {
		err  *Error
		want string
	}{
		{&Error{File: "g.yaml", Line: 3, Path: "stages::plan::in", Err: base}, "g.yaml:3: stages::plan::in: must be ≥ 0"},
		{&Error{File: "g.yaml", Path: "stages", Err: base}, "g.yaml: stages: must be ≥ 0"},
		{&Error{Path: "seed", Err: base}, "seed: must be ≥ 0"},
		{&Error{File: "g.yaml", Line: 1, Err: base}, "g.yaml:1: must be ≥ 0"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
		if !errors.Is(tc.err, base) {
			t.Errorf("%v does not unwrap to its cause", tc.err)
		}
	}
}

func TestAtAndAnnotate(t *testing.T) {
	past := errors.New("must be ≥ 0")
	future := errors.New("must be ≥ 1")
	// What a stage factory returns, wrapped by the graph builder.
	fromFactory := errors.Join(At("window::past", past), At("window::future", future), errors.New("pathless"))
	err := errors.Join(At("stages::plan", fromFactory), At("seed", nil))

	src, perr := parseSource("g.yaml", []byte("stages:\n  plan:\n    window:\n      future: 0\n      past: -1\n"))
	if perr != nil {
		t.Fatal(perr)
	}
	got := Errors(src.Annotate(err))
	want := []string{
		"g.yaml:2: stages::plan: pathless", // sorted by line
		"g.yaml:4: stages::plan::window::future: must be ≥ 1",
		"g.yaml:5: stages::plan::window::past: must be ≥ 0",
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i].Error() != want[i] {
			t.Errorf("error %d = %q, want %q", i, got[i], want[i])
		}
	}
	if !errors.Is(src.Annotate(err), past) {
		t.Error("Annotate lost the cause")
	}
	// An error already in a file keeps its place.
	located := &Error{File: "other.yaml", Line: 9, Path: "x", Err: past}
	if e := At("stages::plan", located); e != error(located) {
		t.Errorf("At moved a located error: %v", e)
	}
	// fmt.Errorf with two %w is not a join: it keeps its message.
	two := At("a", errors.Join(errors.New("x"))) // a join of one
	if two.Error() != "a: x" {
		t.Errorf("At over a join of one = %q", two)
	}
	if At("", past) != past || At("p", nil) != nil {
		t.Error("At with no path or no error should do nothing")
	}
	var nilSrc *Source
	if got := nilSrc.Annotate(At("seed", past)).Error(); got != "seed: must be ≥ 0" {
		t.Errorf("nil Source Annotate = %q", got)
	}
}

func TestDecode(t *testing.T) {
	type window struct {
		Past   int `mapstructure:"past"`
		Future int `mapstructure:"future"`
	}
	type planConfig struct {
		Window  window   `mapstructure:"window"`
		Device  string   `mapstructure:"device"`
		Subject []string `mapstructure:"subjects"`
	}
	cfg := planConfig{Window: window{Past: 3, Future: 2}, Device: "gpu"}
	err := Decode(map[string]any{
		"window":   map[string]any{"past": "three", "fture": 1},
		"subjects": "one",
		"colour":   "blue",
	}, &cfg)
	got := Errors(err)
	want := []string{
		`colour: unknown key "colour" (allowed: device, subjects, window)`,
		`window::fture: unknown key "fture" (allowed under window: future, past)`,
		`window::past: must be an integer, got the string "three"`,
	}
	var msgs []string
	for _, e := range got {
		msgs = append(msgs, e.Error())
	}
	for _, w := range want {
		if !strings.Contains(strings.Join(msgs, "\n"), w) {
			t.Errorf("missing %q in:\n%s", w, strings.Join(msgs, "\n"))
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d errors, want %d", len(got), len(want))
	}
	if cfg.Window.Future != 2 || cfg.Device != "gpu" || !reflect.DeepEqual(cfg.Subject, []string{"one"}) {
		t.Errorf("defaults or scalar list lost: %+v", cfg)
	}
	// Relative paths nest under the caller's.
	for _, e := range Errors(At("stages::plan", err)) {
		if !strings.HasPrefix(e.Path, "stages::plan::") {
			t.Errorf("At did not prefix Decode's path: %v", e)
		}
	}
}

// TestReferenceDoc keeps docs/graph-reference.md honest: its example loads,
// and the keys it promises as stable are in the schema.
func TestReferenceDoc(t *testing.T) {
	doc, err := os.ReadFile("../../docs/graph-reference.md")
	if err != nil {
		t.Skip("docs not in this checkout:", err)
	}
	_, example, ok := strings.Cut(string(doc), "## Example\n\n```yaml\n")
	if !ok {
		t.Fatal("no example graph in the reference")
	}
	example, _, _ = strings.Cut(example, "```")
	path := filepath.Join(t.TempDir(), "example.yaml")
	if err := os.WriteFile(path, []byte(example), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := Load(path, nil)
	if err != nil {
		t.Fatalf("the reference's example does not load:\n%v", err)
	}
	if cfg.Stages["exchange"].Options["device"] != "gpu" {
		t.Errorf("example stage options lost: %+v", cfg.Stages["exchange"])
	}
	for _, key := range []string{"seed", "dataset.batches", "dataset.batch_size", "dataset.tables", "dataset.rows",
		"dataset.dim", "dataset.lookups", "dataset.locality", "cache.size"} {
		if !strings.Contains(string(doc), "`"+key+"`") {
			t.Errorf("stable key %s is not documented", key)
		}
		if _, err := schemaAt(reflect.TypeOf(Config{}), strings.Split(key, ".")); err != nil {
			t.Errorf("stable key %s left the schema: %v", key, err)
		}
	}
}

func TestDevicesMerge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.yaml")
	err := os.WriteFile(path, []byte("devices:\n  tpu: {plugin: ./tpu}\n  gpu: {options: {hbm_gb: 80}}\nstages:\n  load: {kind: load}\n"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Load(path, nil)
	// gpu is replaced as a whole, so it lost its plugin; host and tpu are fine.
	got := Errors(err)
	if len(got) != 1 || !strings.Contains(got[0].Error(), "g.yaml:3: devices::gpu::plugin: must name a plugin") {
		t.Fatalf("got %v", err)
	}
	cfg, _, err := Load(path, []string{"devices.gpu.plugin=builtin:hbm"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Devices) != 3 || cfg.Devices["host"].Plugin != "builtin:cpu-dram" || cfg.Devices["gpu"].Options["hbm_gb"] != 80 {
		t.Errorf("devices = %+v", cfg.Devices)
	}
}

// TestYAMLBomb: anchors of anchors expand exponentially; Load must refuse
// them quickly instead of walking every expansion.
func TestYAMLBomb(t *testing.T) {
	for _, merge := range []bool{false, true} {
		var b strings.Builder
		b.WriteString("a0: &a0 {x: 1, y: 2}\n")
		for i := 1; i < 40; i++ {
			if merge {
				fmt.Fprintf(&b, "a%d: &a%d {<<: [*a%d, *a%d], k%d: 1}\n", i, i, i-1, i-1, i)
			} else {
				fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d]\n", i, i, i-1, i-1)
			}
		}
		path := filepath.Join(t.TempDir(), "bomb.yaml")
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		// With a stage, so that the bomb is the only thing wrong: the file
		// without stages would be refused for that alone.
		_, _, err := Load(path, []string{"stages.load.kind=load"})
		if err == nil {
			t.Errorf("merge=%v: a YAML bomb loaded", merge)
		} else if !strings.Contains(err.Error(), "excessive aliasing") {
			t.Errorf("merge=%v: refused for another reason: %v", merge, err)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[float64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 960 << 20: "960 MiB", 1 << 40: "1 TiB", 1 << 63: "8 EiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%g) = %q, want %q", n, got, want)
		}
	}
}

// tracing.exporter takes every form the telemetry package builds an
// exporter from (an otlp-http path included) and refuses the rest.
func TestTracingExporter(t *testing.T) {
	for _, e := range []string{"none", "stdout", "file:spans.jsonl", "otlp-grpc://127.0.0.1:4317", "otlp-http://127.0.0.1:4318", "otlp-http://collector:4318/v1/traces"} {
		if err := (Tracing{Exporter: e}).Validate(); err != nil {
			t.Errorf("%s: %v", e, err)
		}
	}
	for e, want := range map[string]string{
		"jaeger": "unknown exporter", "file:": "empty file path", "otlp-grpc://nohost": "HOST:PORT",
		"otlp-grpc://h:4317/v1": "no path", "otlp-http://h:99999": "HOST:PORT",
	} {
		if err := (Tracing{Exporter: e}).Validate(); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "exporter") {
			t.Errorf("%s: %v, want an error at exporter containing %q", e, err, want)
		}
	}
}

// A --set replaces a mapping or a list whole and `null` removes a key, so
// a graph's plugin options can be dropped or swapped on the command line.
func TestLoadSetReplacesAndRemoves(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "g.yaml")
	graph := `cache:
  plugin: builtin:scratchpipe
  options: {victim: lru, ways: 4}
model:
  options: {preset: small, learning_rate: 0.2}
stages:
  load: {kind: load, out: [a, b]}
`
	if err := os.WriteFile(file, []byte(graph), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		sets []string
		want func(*Config) bool
	}{
		{"null removes a mapping", []string{"cache.options=null"},
			func(c *Config) bool { return c.Cache.Options == nil }},
		{"~ removes a mapping", []string{"cache.options=~"},
			func(c *Config) bool { return c.Cache.Options == nil }},
		{"{} replaces a mapping", []string{"cache.options={}"},
			func(c *Config) bool { return len(c.Cache.Options) == 0 }},
		{"a mapping replaces, not merges", []string{"cache.options={ways: 8}"},
			func(c *Config) bool { return reflect.DeepEqual(c.Cache.Options, map[string]any{"ways": 8}) }},
		{"null removes one key", []string{"cache.options.victim=null"},
			func(c *Config) bool { return reflect.DeepEqual(c.Cache.Options, map[string]any{"ways": 4}) }},
		{"null on a string key restores the default", []string{"cache.plugin=null"},
			func(c *Config) bool { return c.Cache.Plugin == Default().Cache.Plugin }},
		{"null on a missing key is no error", []string{"nats.url=null", "cache.options.nothing.here=null"},
			func(c *Config) bool { return c.NATS.URL == "" && len(c.Cache.Options) == 2 }},
		{"a list replaces a list", []string{"stages.load.out=[c]"},
			func(c *Config) bool { return reflect.DeepEqual(c.Stages["load"].Out, []string{"c"}) }},
		{"remove then add", []string{"model.options=null", "model.options.preset=tiny"},
			func(c *Config) bool { return reflect.DeepEqual(c.Model.Options, map[string]any{"preset": "tiny"}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := Load(file, tc.sets)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(cfg) {
				t.Errorf("--set %v: cache %+v, model %+v, stages %+v", tc.sets, cfg.Cache, cfg.Model, cfg.Stages)
			}
		})
	}
}

// One rule for relative paths: written in the file, relative to the file's
// directory; given with --set, relative to the working directory.
func TestLoadRelativePaths(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "graphs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "g.yaml")
	graph := `dataset: {kind: file, path: data/x.frb}
cache: {plugin: ../bin/cache}
model: {plugin: /abs/model}
kernel: {plugin: builtin:cpu}
devices: {gpu: {plugin: bin/gpu}}
tracing: {exporter: file:spans.jsonl}
stages:
  load: {kind: load, out: [a]}
`
	if err := os.WriteFile(file, []byte(graph), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	for key, got := range map[string]string{
		filepath.Join(dir, "data/x.frb"):            cfg.Dataset.Path,
		filepath.Join(dir, "../bin/cache"):          cfg.Cache.Plugin,
		"/abs/model":                                cfg.Model.Plugin,
		"builtin:cpu":                               cfg.Kernel.Plugin,
		filepath.Join(dir, "bin/gpu"):               cfg.Devices["gpu"].Plugin,
		"file:" + filepath.Join(dir, "spans.jsonl"): cfg.Tracing.Exporter,
	} {
		if got != key {
			t.Errorf("from the file: got %q, want %q", got, key)
		}
	}
	cfg, _, err = Load(file, []string{"dataset.path=data/y.frb", "cache.plugin=bin/flowrun-cache-lru",
		"devices.gpu.plugin=bin/gpu", "tracing.exporter=file:t.jsonl", "devices={gpu: {plugin: g}, host: {plugin: h}}"})
	if err != nil {
		t.Fatal(err)
	}
	for key, got := range map[string]string{
		"data/y.frb":            cfg.Dataset.Path,
		"bin/flowrun-cache-lru": cfg.Cache.Plugin,
		"g":                     cfg.Devices["gpu"].Plugin,
		"h":                     cfg.Devices["host"].Plugin,
		"file:t.jsonl":          cfg.Tracing.Exporter,
	} {
		if got != key {
			t.Errorf("from --set: got %q, want %q", got, key)
		}
	}
}

// Merge adds a later check's errors in file order, but not those about a
// key an earlier error is about (or one above or below it).
func TestMerge(t *testing.T) {
	first := errors.Join(&Error{File: "g", Line: 3, Path: "cache::size", Err: errors.New("a")},
		&Error{File: "g", Line: 9, Path: "stages::plan", Err: errors.New("b")})
	later := errors.Join(&Error{File: "g", Line: 3, Path: "cache::size", Err: errors.New("again")},
		&Error{File: "g", Line: 10, Path: "stages::plan::past_window", Err: errors.New("below")},
		&Error{File: "g", Line: 5, Path: "stages::load::out", Err: errors.New("c")},
		&Error{File: "g", Err: errors.New("whole")})
	var got []string
	for _, e := range Errors(Merge(first, later)) {
		got = append(got, e.Err.Error())
	}
	if want := []string{"whole", "a", "c", "b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Merge = %v, want %v", got, want)
	}
	if Merge(nil, nil) != nil {
		t.Error("Merge(nil, nil) != nil")
	}
}

// The key path an error prints is a --set key as it is.
func TestErrorPathIsASetKey(t *testing.T) {
	_, _, err := Load("testdata/good.yaml", []string{"dataset.batches=0"})
	errs := Errors(err)
	if len(errs) != 1 || errs[0].Path != "dataset::batches" {
		t.Fatalf("errors %v, want one at dataset::batches", errs)
	}
	cfg, _, err := Load("testdata/good.yaml", []string{errs[0].Path + "=7"})
	if err != nil || cfg.Dataset.Batches != 7 {
		t.Fatalf("--set %s=7: %v, batches %v", errs[0].Path, err, cfg)
	}
}
