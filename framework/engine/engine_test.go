package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/bus"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/engine"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/plugins/caches/lru"
	"github.com/flowrun/flowrun/plugins/devices/cpudram"
	"github.com/flowrun/flowrun/plugins/devices/hbm"
	"github.com/flowrun/flowrun/plugins/kernels/cpu"
	"github.com/flowrun/flowrun/plugins/models/logreg"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/model"
)

// The runtime is tested with three stage kinds of its own, built through
// stage.NewFactory like every real kind, that record what the runtime does
// to them: gen (a source of N batches), relay (passes batches on, and can
// fail or report a plugin crash on a given batch) and sink (can be slow).
// Plugins are the built-in ones, in process.

// recorder is what the test stages saw, shared by one run's stages.
type recorder struct {
	mu       sync.Mutex
	seqs     map[string][]uint64 // stage → batches processed, in order
	created  []string
	finished map[string]int // stage → Finish calls
	finishAt map[string]int // stage → batches it had seen at Finish
	closed   []string

	// In flight: batches the source has started minus batches the sinks
	// have finished (a lower bound of the buffers held, since a buffer is
	// released only after its sink returns).
	started, sunk int
	maxInFlight   int
	// Batches a lookahead stage has handed on minus batches the sinks have
	// finished, and its largest value.
	past, maxPast int

	// crashes receives the crash a relay reports (crash_at).
	crashes chan error
	// gate, when set before the run, holds the sinks inside their first
	// batch until it is closed.
	gate chan struct{}
	// atFinish, when set before the run, is called by every stage's
	// Finish with the stage's name and Settings, after the last batch and
	// before the run's digest.
	atFinish func(name string, set stage.Settings) error
	// atBatch, when set before the run, is called by the sink with each
	// batch it processes (checkpoint_test.go: stands in for training).
	atBatch func(name string, seq uint64, set stage.Settings)
}

func newRecorder() *recorder {
	return &recorder{
		seqs: map[string][]uint64{}, finished: map[string]int{}, finishAt: map[string]int{},
		crashes: make(chan error, 1),
	}
}

func (r *recorder) saw(name string, seq uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seqs[name] = append(r.seqs[name], seq)
}

func (r *recorder) seen(name string) []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seqs[name])
}

// common is what every test stage does besides its batches.
type common struct {
	name string
	rec  *recorder
	set  stage.Settings
}

func (c *common) Finish(context.Context) error {
	c.rec.mu.Lock()
	c.rec.finished[c.name]++
	c.rec.finishAt[c.name] = len(c.rec.seqs[c.name])
	c.rec.mu.Unlock()
	if c.rec.atFinish != nil {
		return c.rec.atFinish(c.name, c.set)
	}
	return nil
}

func (c *common) Close(context.Context) error {
	c.rec.mu.Lock()
	defer c.rec.mu.Unlock()
	c.rec.closed = append(c.rec.closed, c.name)
	return nil
}

type genConfig struct {
	Batches int `mapstructure:"batches"`
}

func (c *genConfig) Validate() error {
	if c.Batches < 1 {
		return errors.New("batches: must be ≥ 1")
	}
	return nil
}

type gen struct {
	common
	n int
}

func (g *gen) Batches() uint64 { return uint64(g.n) }

func (g *gen) Next(_ context.Context, b *batch.Batch) error {
	g.rec.mu.Lock()
	g.rec.started++
	g.rec.maxInFlight = max(g.rec.maxInFlight, g.rec.started-g.rec.sunk)
	g.rec.mu.Unlock()
	g.rec.saw(g.name, b.Seq)
	b.SetStat("made_by_gen", int64(b.Seq))
	return nil
}

type relayConfig struct {
	// FailAt is the batch the relay fails on (-1: none).
	FailAt int `mapstructure:"fail_at"`
	// CrashAt is the batch on which the relay reports a plugin crash and
	// then waits for the run to stop (-1: none).
	CrashAt int `mapstructure:"crash_at"`
	// WorkUs is how long the relay computes (and allocates) per batch, so
	// a benchmark can see a hop beside stages that really work.
	WorkUs int `mapstructure:"work_us"`
}

func (c *relayConfig) Validate() error { return nil }

// errRelay is the cause of a relay's failure.
var errRelay = errors.New("relay: refusing the batch")

type relay struct {
	common
	cfg *relayConfig
}

func (r *relay) Process(ctx context.Context, b *batch.Batch) error {
	if got, ok := b.Stats["made_by_gen"]; !ok || got != int64(b.Seq) {
		return fmt.Errorf("batch %d arrived without the source's stat (%v)", b.Seq, b.Stats)
	}
	if int(b.Seq) == r.cfg.FailAt {
		return fmt.Errorf("batch %d: %w", b.Seq, errRelay)
	}
	if int(b.Seq) == r.cfg.CrashAt {
		r.rec.crashes <- fmt.Errorf("cache plugin %q exited unexpectedly (signal: killed)", "fake")
		<-ctx.Done()
		return ctx.Err()
	}
	busy(time.Duration(r.cfg.WorkUs) * time.Microsecond)
	r.rec.saw(r.name, b.Seq)
	return nil
}

// busy computes for d, as a stage's own work would, without allocating
// (a hop's cost must not include the garbage collector's).
func busy(d time.Duration) {
	var buf [1024]float64
	for start := time.Now(); time.Since(start) < d; {
		for i := range buf {
			buf[i] += float64(i) * 1.0001
		}
	}
	busySink = buf[0]
}

var busySink float64

type sinkConfig struct {
	// DelayMs is how long the sink takes per batch.
	DelayMs int `mapstructure:"delay_ms"`
}

func (c *sinkConfig) Validate() error { return nil }

type sink struct {
	common
	cfg *sinkConfig
}

func (s *sink) Process(ctx context.Context, b *batch.Batch) error {
	if b.Seq == 0 && s.rec.gate != nil {
		select {
		case <-s.rec.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	time.Sleep(time.Duration(s.cfg.DelayMs) * time.Millisecond)
	s.rec.saw(s.name, b.Seq)
	if s.rec.atBatch != nil {
		s.rec.atBatch(s.name, b.Seq, s.set)
	}
	s.rec.mu.Lock()
	s.rec.sunk++
	s.rec.mu.Unlock()
	return nil
}

// kinds is the registry of the test stage kinds, recording into rec.
func kinds(t testing.TB, rec *recorder) stage.Registry {
	t.Helper()
	created := func(set stage.Settings) common {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.created = append(rec.created, set.Name)
		return common{name: set.Name, rec: rec, set: set}
	}
	reg, err := stage.NewRegistry(
		stage.NewFactory("gen",
			func() stage.Config { return &genConfig{Batches: 10} },
			func(_ context.Context, set stage.Settings, cfg stage.Config) (any, error) {
				return &gen{common: created(set), n: cfg.(*genConfig).Batches}, nil
			},
			stage.AsSource()),
		stage.NewFactory("relay",
			func() stage.Config { return &relayConfig{FailAt: -1, CrashAt: -1} },
			func(_ context.Context, set stage.Settings, cfg stage.Config) (any, error) {
				return &relay{common: created(set), cfg: cfg.(*relayConfig)}, nil
			}),
		stage.NewFactory("peek",
			func() stage.Config { return &peekConfig{Ahead: 2} },
			func(_ context.Context, set stage.Settings, cfg stage.Config) (any, error) {
				return &peek{common: created(set), ahead: cfg.(*peekConfig).Ahead}, nil
			}),
		stage.NewFactory("sink",
			func() stage.Config { return &sinkConfig{} },
			func(_ context.Context, set stage.Settings, cfg stage.Config) (any, error) {
				return &sink{common: created(set), cfg: cfg.(*sinkConfig)}, nil
			}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// host is a plugin host with the built-in plugins the default graph names.
func host(t testing.TB) *pluginhost.Host {
	t.Helper()
	h, err := pluginhost.New(pluginhost.Settings{Builtins: pluginhost.Builtins{
		Caches:  map[string]func() cache.Cache{"lru": lru.New},
		Kernels: map[string]func() kernel.Kernel{"cpu": cpu.New},
		Models:  map[string]func() model.Model{"logreg": logreg.New},
		Devices: map[string]func() device.Device{"cpu-dram": cpudram.New, "hbm": hbm.New},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// conn connects to a new embedded NATS server.
func conn(t testing.TB) *bus.Conn {
	t.Helper()
	srv, err := bus.StartEmbedded(bus.ServerOptions{Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	c, err := bus.Connect(srv.ClientURL(), srv.Auth())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// tinyDataset keeps the tables and batches small: the test stages do not
// read them.
const tinyDataset = `
dataset:
  batches: 4
  batch_size: 8
  tables: 2
  rows: 1000
  dim: 4
  eval_batches: 0
nats:
  credits: 2
`

// env is one test run's graph and its surroundings.
type env struct {
	rec   *recorder
	reg   stage.Registry
	graph *graph.Graph
	spans *tracetest.SpanRecorder
	opts  engine.Options
}

// newEnv builds the graph whose stages section is stagesYAML (and whose
// other top-level keys are extra) over the tiny dataset.
func newEnv(t testing.TB, extra, stagesYAML string) *env {
	t.Helper()
	e := &env{rec: newRecorder(), spans: tracetest.NewSpanRecorder()}
	e.reg = kinds(t, e.rec)
	path := filepath.Join(t.TempDir(), "graph.yaml")
	doc := "name: runtime-test\n" + extra + tinyDataset + "stages:\n" + stagesYAML
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, src, err := config.Load(path, nil)
	if err != nil {
		t.Fatalf("load:\n%s\n%v", doc, err)
	}
	if e.graph, err = graph.Build(cfg, src, e.reg, nil); err != nil {
		t.Fatalf("build:\n%s\n%v", doc, err)
	}
	e.opts = engine.Options{
		Graph: e.graph, Stages: e.reg, Plugins: host(t), Bus: conn(t),
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(e.spans)),
	}
	return e
}

// run runs the graph with a generous deadline: a hang fails the test
// instead of the whole package.
func (e *env) run(t *testing.T) (*results.Results, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := engine.Run(ctx, e.opts)
	if ctx.Err() != nil {
		t.Fatalf("run did not end within 30s: %v", err)
	}
	return res, err
}

func seqs(n int) []uint64 {
	s := make([]uint64, n)
	for i := range s {
		s[i] = uint64(i)
	}
	return s
}

// TestBatchesReachSinksOnceInOrder fans the source out to two sinks, one
// through a relay: every stage sees every batch exactly once, in order; the
// run ends once both sinks have every batch; Finish comes after the last
// batch, Close after that, in reverse order of creation.
func TestBatchesReachSinksOnceInOrder(t *testing.T) {
	t.Parallel()
	const n = 30
	e := newEnv(t, "", fmt.Sprintf(`
  gen: {kind: gen, out: [a, b], batches: %d}
  relay: {kind: relay, in: a, out: [c]}
  near: {kind: sink, in: b}
  far: {kind: sink, in: c, delay_ms: 1}
`, n))
	res, err := e.run(t)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gen", "relay", "near", "far"} {
		if got := e.rec.seen(name); !slices.Equal(got, seqs(n)) {
			t.Errorf("%s saw batches %v, want 0..%d once each, in order", name, got, n-1)
		}
		if f := e.rec.finished[name]; f != 1 {
			t.Errorf("%s: Finish called %d times, want once", name, f)
		}
		if at := e.rec.finishAt[name]; at != n {
			t.Errorf("%s: Finish called after %d batches, want after all %d", name, at, n)
		}
	}
	want := slices.Clone(e.rec.created)
	slices.Reverse(want)
	if !slices.Equal(e.rec.closed, want) {
		t.Errorf("closed %v, want every stage once in reverse order of creation %v", e.rec.closed, e.rec.created)
	}
	if len(res.Stages) != 4 {
		t.Fatalf("results have %d stages, want 4", len(res.Stages))
	}
	for _, s := range res.Stages {
		if s.Batches != n {
			t.Errorf("results: stage %s did %d batches, want %d", s.Name, s.Batches, n)
		}
	}
	if len(res.Plugins) == 0 {
		t.Error("results name no plugins")
	}
	for _, p := range res.Plugins {
		if p.Remote {
			t.Errorf("results: %s plugin %s reported out of process", p.Role, p.Ref)
		}
	}

	// One span per stage per batch, each downstream span a child of its
	// upstream stage's span of the same batch.
	type key struct {
		name string
		seq  int64
	}
	byKey := map[key]sdktrace.ReadOnlySpan{}
	for _, s := range e.spans.Ended() {
		for _, a := range s.Attributes() {
			if a.Key == "flowrun.batch.seq" && s.InstrumentationScope().Name == "github.com/flowrun/flowrun/framework/engine" {
				k := key{s.Name(), a.Value.AsInt64()}
				if byKey[k] != nil {
					t.Errorf("two spans for %s batch %d", k.name, k.seq)
				}
				byKey[k] = s
			}
		}
	}
	up := map[string]string{"relay/relay": "gen/gen", "sink/near": "gen/gen", "sink/far": "relay/relay"}
	for seq := range int64(n) {
		for _, name := range []string{"gen/gen", "relay/relay", "sink/near", "sink/far"} {
			s := byKey[key{name, seq}]
			if s == nil {
				t.Errorf("no span for %s batch %d", name, seq)
				continue
			}
			if b := byKey[key{"batch", seq}]; b == nil || s.Parent().SpanID() != b.SpanContext().SpanID() {
				t.Errorf("%s batch %d: parent %v, want the batch's span", name, seq, s.Parent().SpanID())
			}
			if u, ok := up[name]; ok {
				p := byKey[key{u, seq}]
				if p == nil || len(s.Links()) != 1 || s.Links()[0].SpanContext.SpanID() != p.SpanContext().SpanID() {
					t.Errorf("%s batch %d: links %v, want one to %s's span of the batch", name, seq, s.Links(), u)
				}
			}
		}
	}
}

// TestStageErrorStopsRun makes the relay fail on batch 3: Run returns a
// *engine.StageError naming the stage, the batch and the cause, no
// results; nothing downstream sees batch 3 or later; the source stops; the
// stages are still closed, and not finished.
func TestStageErrorStopsRun(t *testing.T) {
	t.Parallel()
	const n = 1000
	e := newEnv(t, "", fmt.Sprintf(`
  gen: {kind: gen, out: [a], batches: %d}
  relay: {kind: relay, in: a, out: [b], fail_at: 3}
  sink: {kind: sink, in: b}
`, n))
	res, err := e.run(t)
	if res != nil {
		t.Errorf("a failed run returned results %+v", res)
	}
	var se *engine.StageError
	if !errors.As(err, &se) {
		t.Fatalf("Run: %v, want a *engine.StageError", err)
	}
	if se.Stage != "relay/relay" || se.Seq != 3 || !errors.Is(err, errRelay) {
		t.Errorf("StageError{%s, %d, %v}, want relay/relay on batch 3 with the relay's error", se.Stage, se.Seq, se.Err)
	}
	for _, want := range []string{"relay/relay", "batch 3", errRelay.Error()} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if got := e.rec.seen("sink"); !slices.Equal(got, seqs(3)) {
		t.Errorf("sink saw %v, want batches 0, 1, 2 only", got)
	}
	// The pool bounds how far the source ran ahead of the failure.
	if made := len(e.rec.seen("gen")); made >= n {
		t.Errorf("the source made all %d batches after the failure", made)
	}
	if len(e.rec.finished) != 0 {
		t.Errorf("Finish called on a failed run: %v", e.rec.finished)
	}
	if len(e.rec.closed) != 3 {
		t.Errorf("closed %v after a failure, want all 3 stages", e.rec.closed)
	}
}

// crashingHost is the plugin host with its crash reports replaced by the
// test's.
type crashingHost struct {
	*pluginhost.Host
	failures chan error
}

func (h crashingHost) Failures() <-chan error { return h.failures }

// TestPluginCrashStopsRun reports a plugin crash while a stage waits on its
// batch: Run stops with the host's error, which names the plugin.
func TestPluginCrashStopsRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", `
  gen: {kind: gen, out: [a], batches: 1000}
  relay: {kind: relay, in: a, out: [b], crash_at: 5}
  sink: {kind: sink, in: b}
`)
	e.opts.Plugins = crashingHost{Host: e.opts.Plugins.(*pluginhost.Host), failures: e.rec.crashes}
	res, err := e.run(t)
	if res != nil || err == nil || !strings.Contains(err.Error(), `cache plugin "fake" exited unexpectedly`) {
		t.Fatalf("Run = %v, %v; want the plugin crash", res, err)
	}
	if got := e.rec.seen("sink"); !slices.Equal(got, seqs(5)) {
		t.Errorf("sink saw %v, want batches 0..4", got)
	}
}

// TestBoundedInFlight puts a slow sink behind a fast source: the batches in
// flight never exceed the pool (one buffer per stage plus the credits), and
// the pipeline does overlap batches.
func TestBoundedInFlight(t *testing.T) {
	t.Parallel()
	const n = 40
	e := newEnv(t, "pipeline: pipelined\n", fmt.Sprintf(`
  gen: {kind: gen, out: [a], batches: %d}
  relay: {kind: relay, in: a, out: [b]}
  sink: {kind: sink, in: b, delay_ms: 3}
`, n))
	if _, err := e.run(t); err != nil {
		t.Fatal(err)
	}
	if got := e.rec.seen("sink"); !slices.Equal(got, seqs(n)) {
		t.Fatalf("sink saw %v", got)
	}
	pool := len(e.graph.Nodes) + e.graph.Config.NATS.Credits
	if m := e.rec.maxInFlight; m > pool {
		t.Errorf("%d batches in flight, more than the pool of %d", m, pool)
	} else if m < 2 {
		t.Errorf("at most %d batch in flight: a pipelined graph with a slow sink should overlap batches", m)
	}
	t.Logf("max in flight %d of %d buffers", e.rec.maxInFlight, pool)
}

// TestSequentialOneInFlight is the same graph with pipeline: sequential: the
// source starts a batch only once the sink has finished the one before.
func TestSequentialOneInFlight(t *testing.T) {
	t.Parallel()
	const n = 20
	e := newEnv(t, "pipeline: sequential\n", fmt.Sprintf(`
  gen: {kind: gen, out: [a], batches: %d}
  relay: {kind: relay, in: a, out: [b]}
  sink: {kind: sink, in: b, delay_ms: 1}
`, n))
	if _, err := e.run(t); err != nil {
		t.Fatal(err)
	}
	if got := e.rec.seen("sink"); !slices.Equal(got, seqs(n)) {
		t.Fatalf("sink saw %v", got)
	}
	if m := e.rec.maxInFlight; m != 1 {
		t.Errorf("%d batches in flight in a sequential graph, want 1", m)
	}
}

// TestRootSpanRecordsFailure checks that a failed run's root span carries
// the error, so the trace shows why the run ended.
func TestRootSpanRecordsFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", `
  gen: {kind: gen, out: [a], batches: 10}
  relay: {kind: relay, in: a, out: [b], fail_at: 2}
  sink: {kind: sink, in: b}
`)
	if _, err := e.run(t); err == nil {
		t.Fatal("run succeeded")
	}
	var root sdktrace.ReadOnlySpan
	for _, s := range e.spans.Ended() {
		if s.Name() == "flowrun.run" {
			root = s
		}
	}
	if root == nil {
		t.Fatal("no flowrun.run span")
	}
	if root.Status().Code.String() != "Error" || !strings.Contains(root.Status().Description, "relay/relay") {
		t.Errorf("root span status %v %q, want an error naming the stage", root.Status().Code, root.Status().Description)
	}
}

// TestServerLostEndsRun: a NATS server that goes away mid-run and stays
// away beyond the connection's grace ends the run with an error naming
// the server and how far every stage got, instead of a wait.
func TestServerLostEndsRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", `
  gen: {kind: gen, out: [a], batches: 100000}
  relay: {kind: relay, in: a, out: [b]}
  sink: {kind: sink, in: b, delay_ms: 1}
`)
	srv, err := bus.StartEmbedded(bus.ServerOptions{Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	c, err := bus.Connect(srv.ClientURL(), bus.WithGrace(300*time.Millisecond), srv.Auth())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	e.opts.Bus = c
	go func() {
		for len(e.rec.seen("sink")) < 3 {
			time.Sleep(time.Millisecond)
		}
		srv.Shutdown()
	}()
	res, err := e.run(t)
	if res != nil || !errors.Is(err, bus.ErrServerLost) {
		t.Fatalf("Run: %v, %v; want no results and bus.ErrServerLost", res, err)
	}
	t.Log(err)
	for _, want := range []string{srv.ClientURL(), "gen/gen 0–", "sink/sink 0–"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}
