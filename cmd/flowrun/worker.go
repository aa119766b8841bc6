package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/flowrun/flowrun/framework/bus"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/engine"
	"github.com/flowrun/flowrun/framework/placement"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/summary"
	"github.com/flowrun/flowrun/framework/telemetry"
)

// workerFlags are flowrun worker's flags.
type workerFlags struct {
	graph     string
	sets      []string
	nats      string
	natsAuth  natsAuthFlags
	natsGrace time.Duration
	runID     string
	name      string
	stages    []string
	host      string
	wait      time.Duration
	quiet     bool
	trace     string
}

const workerLong = `Run some stages of a graph for a run started elsewhere.

The graph's placement section puts stages on named workers:

  placement:
    workers:
      w1: {stages: [plan, exchange]}

flowrun run --nats URL GRAPH starts the other stages and waits for every
worker; each worker, started with the same graph file and --set flags,

  flowrun worker --nats URL --graph GRAPH --name w1 [--run ID]

opens the plugins its stages use, joins the run (the run refuses a worker
whose graph or overrides differ: they are compared by digest), processes
its stages' batches and leaves when the run ends. Without --run it joins
the run of its graph on that server. --stages plan,exchange names the
worker by the stages the placement gives it instead of --name.

Stages on the run's host map the run's shared-memory batches (zero-copy);
a worker whose host label (placement.workers.NAME.host, --host, or its
host name) differs from the run's receives and returns a batch's arrays
by value over NATS. A worker that fails or falls silent fails the run,
which names it. Exit codes: 0 the run completed, 1 it failed or the
worker failed, 2 bad usage or a graph that is not the run's.`

func newWorkerCmd() *cobra.Command {
	var f workerFlags
	cmd := &cobra.Command{
		Use:   "worker --nats URL --graph GRAPH (--name W | --stages a,b)",
		Short: "Run placed stages of a graph for a run on a NATS server",
		Long:  workerLong,
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return interruptible(cmd, func(ctx context.Context) error {
				return runWorker(ctx, f, cmd.ErrOrStderr())
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.graph, "graph", "", "the run's graph `FILE`")
	fs.StringArrayVar(&f.sets, "set", nil, "override a graph key, `key=value` (repeatable), as the run does")
	fs.StringVar(&f.nats, "nats", "", "the run's NATS server(s) `URL` (comma-separated for a cluster)")
	f.natsAuth.register(cmd)
	fs.DurationVar(&f.natsGrace, "nats-grace", bus.DefaultGrace, "how long to ride out an unreachable NATS server")
	fs.StringVar(&f.runID, "run", "", "the run `ID` to join (default: the run of this graph on the server)")
	fs.StringVar(&f.name, "name", "", "the worker's `NAME` in the graph's placement")
	fs.StringSliceVar(&f.stages, "stages", nil, "the stages to run (`a,b`), instead of --name: the placement's worker with exactly these")
	fs.StringVar(&f.host, "host", "", "the host `LABEL` where the placement gives the worker none (default: the host name)")
	fs.DurationVar(&f.wait, "wait", time.Minute, "how long to wait for the run to answer")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "print nothing but errors")
	fs.StringVar(&f.trace, "trace", "none", "trace exporter for the worker's stage spans (children of the run's batch spans): none, stdout, file:PATH, otlp-grpc://host:port, otlp-http://host:port")
	return cmd
}

// runWorker loads the graph as the run did and works for the run.
func runWorker(ctx context.Context, f workerFlags, stderr io.Writer) error {
	if f.graph == "" || f.nats == "" {
		return usageError{errors.New("flowrun worker needs --graph FILE and --nats URL (the run's graph and server)")}
	}
	g, err := validateGraph(f.graph, f.sets, true)
	if err != nil {
		return err
	}
	name, err := workerName(g.Config.Placement, f.name, f.stages)
	if err != nil {
		return usageError{err}
	}
	level := slog.LevelWarn
	if f.quiet {
		level = slog.LevelError
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	tel, err := telemetry.Setup(ctx, f.trace, telemetry.Resource{Graph: g.Config.Name, Version: version,
		Attributes: map[string]string{"flowrun.worker": name}}, telemetry.WithLogger(log))
	if err != nil {
		return usageError{err}
	}
	defer tel.Shutdown(context.WithoutCancel(ctx))
	host, err := newHost(tel.TracerProvider(), stderr, f.quiet)
	if err != nil {
		return err
	}
	defer host.Close()
	if err := pinPlugins(host, g.Config); err != nil {
		return usageError{err}
	}
	conn, stop, err := connectBus(g.Config, runFlags{nats: f.nats, natsAuth: f.natsAuth, natsGrace: f.natsGrace}, log)
	if err != nil {
		return err
	}
	defer stop()
	err = engine.Work(ctx, engine.WorkOptions{
		Graph: g, Stages: stages(), Plugins: locatedOpener{host, g.Config}, Bus: conn,
		TracerProvider: tel.TracerProvider(), Logger: log, RunID: f.runID, Worker: name, Host: f.host, Wait: f.wait,
		Joined: func(id string) {
			if !f.quiet {
				fmt.Fprintf(stderr, "flowrun worker %s: joined run %s (stages %s)\n", name, id,
					strings.Join(g.Config.Placement.Workers[name].Stages, ","))
			}
		},
	})
	if errors.Is(err, placement.ErrRefused) {
		return usageError{fmt.Errorf("worker %s: %w", name, err)}
	}
	if err != nil {
		return fmt.Errorf("worker %s: %w", name, err)
	}
	return nil
}

// workerName is the placement's worker named, or the one whose stages are
// exactly stages.
func workerName(p *config.Placement, name string, stages []string) (string, error) {
	if p == nil {
		return "", errors.New("the graph has no placement section: add placement.workers.NAME.stages (or --set placement.workers.w1.stages=[plan])")
	}
	if name != "" {
		w, ok := p.Workers[name]
		if !ok {
			return "", fmt.Errorf("--name %s: the placement's workers are %s", name, strings.Join(p.WorkerNames(), ", "))
		}
		if len(stages) > 0 && !placement.SameSet(w.Stages, stages) {
			return "", fmt.Errorf("--stages %s: the placement gives worker %s %s", strings.Join(stages, ","), name, strings.Join(w.Stages, ","))
		}
		return name, nil
	}
	if len(stages) == 0 {
		return "", errors.New("give --name (a worker of the placement) or --stages")
	}
	for _, n := range p.WorkerNames() {
		if placement.SameSet(p.Workers[n].Stages, stages) {
			return n, nil
		}
	}
	return "", fmt.Errorf("--stages %s: no worker of the placement has exactly these stages", strings.Join(stages, ","))
}

// placementHint is the command that starts worker w of run id, for the
// run's message while it waits and its error when a worker never came.
func placementHint(path string, sets []string, natsURL string) func(w, id string) string {
	return func(w, id string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "flowrun worker --nats %s --run %s --graph %s --name %s", natsURL, id, path, w)
		for _, s := range sets {
			fmt.Fprintf(&b, " --set %q", s)
		}
		return b.String()
	}
}

// announcePlacement says, before the run waits for its workers, how to
// start each; a placement needs an external NATS server, which workers
// can reach.
func announcePlacement(cfg *config.Config, f runFlags, path, runID string, bar *summary.Progress) (func(w, id string) string, error) {
	if cfg.Placement == nil {
		return nil, nil
	}
	url := f.nats
	if url == "" {
		url = cfg.NATS.URL
	}
	if url == "" {
		return nil, usageError{errors.New("the graph places stages on workers (placement): give --nats URL, a server the workers can reach (the embedded one admits only this process)")}
	}
	hint := placementHint(path, f.sets, bus.RedactURLs(url))
	if !f.quiet {
		fmt.Fprintf(bar, "flowrun: run %s waits up to %v for %d worker(s):\n", runID, cfg.Placement.WaitFor(), len(cfg.Placement.Workers))
		for _, w := range cfg.Placement.WorkerNames() {
			fmt.Fprintf(bar, "  %s\n", hint(w, runID))
		}
	}
	return hint, nil
}

// validRunID reports whether id can be a token of a NATS subject.
func validRunID(id string) bool {
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return id != ""
}

// writePlacement adds to the summary where the placed stages ran and
// what crossed each edge between processes (nothing without a placement).
func writePlacement(w io.Writer, p *results.Placement) {
	if p == nil {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(p.Workers)) {
		pw := p.Workers[name]
		fmt.Fprintf(w, "%-12s %s on %s (pid %d): %s\n", "worker", name, pw.Host, pw.PID, strings.Join(pw.Stages, ", "))
	}
	for _, e := range p.Edges {
		how := "shared memory: header only"
		if e.ByValue && e.Batches > 0 {
			n := float64(e.Batches)
			how = fmt.Sprintf("by value: %s and %.1f messages per batch, %.2f ms sending, measured",
				config.FormatBytes(float64(e.Bytes)/n), float64(e.Messages)/n, e.SendMs/n)
		}
		fmt.Fprintf(w, "%-12s %s → %s (%s): %s\n", "edge", e.From, e.To, e.Subject, how)
	}
}
