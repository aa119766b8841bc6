package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/flowrun/flowrun/framework/bus"
	"github.com/flowrun/flowrun/framework/clock"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/engine"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/summary"
	"github.com/flowrun/flowrun/framework/telemetry"
)

type runFlags struct {
	sets  []string
	out   string
	trace string
	nats  string
	// natsAuth are --nats-creds, --nats-nkey, --nats-token-file, --nats-ca,
	// --nats-cert and --nats-key: how to sign in to (and verify) --nats.
	natsAuth natsAuthFlags
	// natsGrace is how long a run rides out an unreachable NATS server.
	natsGrace time.Duration
	quiet     bool
	// json prints the results as JSON on stdout instead of the summary.
	json bool
	// hazards is --check-hazards: strict, dynamic or off.
	hazards string
	// modeled, when set, is handed the run's modeled timeline and the
	// stages' lookahead (engine.Options.Modeled): bench --warmup.
	modeled func(*clock.Timeline, int)
	// ckpt is --checkpoint-every, --checkpoint-dir and --resume.
	ckpt checkpointFlags
	// record is --record and --record-window (record.go); recorder, when
	// set, gets the run's batches (replay's check against a record).
	record   recordFlags
	recorder engine.Recorder
	// runID is --run-id: the run's id (default random), which a
	// placement's workers join (worker.go).
	runID string
}

// runLong is run's help text.
const runLong = `Run a training or inference graph to the end.

Every key of the graph can be overridden with --set (repeatable), e.g.
  flowrun run graphs/demo.yaml --set seed=7 --set dataset.batches=40

Traces go where --trace says (or the graph's tracing.exporter): none, stdout,
file:PATH (JSON lines), otlp-grpc://host:port or otlp-http://host:port.
Stages talk over an embedded NATS server (loopback, admitting only this
run's own connections) unless --nats names one; --nats-token-file (or
FLOWRUN_NATS_TOKEN), --nats-nkey, --nats-creds, --nats-ca, --nats-cert and
--nats-key sign in to it. Secrets come from files, never from flags.
On a terminal a progress bar runs on stderr; at the end the summary table
goes to stdout (--json: the results JSON instead; --quiet: nothing; with
--trace stdout the spans go to stdout and the summary to stderr).
A failed run names the stage, batch and cause and writes no results file;
an older results file at --out's path is renamed FILE.stale when the run
starts (removed once the new one is written), so it never looks current.
Exit codes: 0 ok, 1 the run failed, 2 bad usage or an invalid graph
(or a checkpoint that is corrupt or another run's), 130 interrupted
(Ctrl-C or SIGTERM).

--checkpoint-every N writes, every N training batches, what the run needs
to continue (host rows, the model's and the cache's state, Storage,
metrics) under --checkpoint-dir, atomically; --resume DIR continues from
the newest checkpoint there (or from DIR itself, a ckpt-BATCH directory),
with the same graph file and --set flags, and ends with the digest of the
run never interrupted.

--record DIR keeps the last --record-window batches' lookups and the
serving policy's plan decisions, with checkpoints, in DIR (written when
the run ends or fails, with its size); flowrun replay DIR re-runs them.

--check-hazards checks, while the graph runs, that no stage reads a Storage
slot or host row that an earlier batch still in flight has yet to write
(ScratchPipe's RAW hazards 1-4), and fails the run naming the batch, the
stage, the slot or row and the writer. Bare, it is strict: a read that only
this run's timing kept safe fails too, so a plan whose windows are too small
fails on every run; --check-hazards=dynamic reports only what this run's
interleaving actually broke.`

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run GRAPH",
		Short: "Run a graph and print its summary",
		Long:  runLong,
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.json && f.quiet {
				return usageError{errors.New("--json and --quiet: choose one (--json prints only the results)")}
			}
			if f.json && f.trace == "stdout" {
				return usageError{errors.New("--json and --trace stdout both write to stdout: trace to a file (--trace file:PATH)")}
			}
			stale, err := moveAsideResults(f.out)
			if err != nil {
				return err
			}
			defer keptStale(&stale, cmd.ErrOrStderr())
			var res *results.Results
			err = interruptible(cmd, func(ctx context.Context) (err error) {
				res, err = runGraph(ctx, args[0], f, cmd.ErrOrStderr())
				return err
			})
			if err != nil {
				return err
			}
			if f.out != "" {
				if err := res.Write(f.out); err != nil {
					return err
				}
				if stale != "" {
					_ = os.Remove(stale) // superseded; absent is fine
					stale = ""
				}
			}
			switch {
			case f.json:
				return printResultsJSON(cmd.OutOrStdout(), res)
			case !f.quiet:
				// Spans on stdout are JSON lines for a program to read:
				// the summary for a person goes to stderr then.
				w := cmd.OutOrStdout()
				if spansOnStdout(f.trace, res.Config) {
					w = cmd.ErrOrStderr()
				}
				summary.Write(w, res)
				writePlacement(w, res.Placement) // worker.go
				if f.out != "" {
					fmt.Fprintf(w, "%-12s %s\n", "results", f.out)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&f.sets, "set", nil, "override a graph key, `key=value` (repeatable)")
	cmd.Flags().StringVar(&f.out, "out", "", "write results as JSON to `FILE`")
	cmd.Flags().StringVar(&f.trace, "trace", "", "trace exporter: none, stdout, file:PATH, otlp-grpc://host:port, otlp-http://host:port (default: the graph's tracing.exporter)")
	cmd.Flags().StringVar(&f.nats, "nats", "", "use the NATS server at `URL` (nats://host:port) instead of an embedded one")
	f.natsAuth.register(cmd)
	cmd.Flags().DurationVar(&f.natsGrace, "nats-grace", bus.DefaultGrace, "how long to ride out an unreachable NATS server (a restart) before the run fails, naming it")
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "print nothing but errors (no progress bar, no summary)")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the results as JSON on stdout instead of the summary (the content of --out's file)")
	cmd.Flags().StringVar(&f.hazards, "check-hazards", "off", "check ScratchPipe's RAW hazards at run time: `strict` (the flag alone), dynamic or off")
	cmd.Flags().Lookup("check-hazards").NoOptDefVal = string(engine.HazardsStrict)
	f.ckpt.register(cmd)
	f.record.register(cmd)
	cmd.Flags().StringVar(&f.runID, "run-id", "", "the run's `ID` (16 hex digits by default, random): what a placement's workers join")
	return cmd
}

// moveAsideResults renames an earlier results file at out (the --out
// path) to out.stale before the run starts, so that a run that fails, or
// is killed, never leaves an old file looking like its result. It returns
// the stale file's name ("" without --out), for the caller to remove once
// the new results are written (with what an earlier failed run left).
func moveAsideResults(out string) (string, error) {
	if out == "" {
		return "", nil
	}
	stale := out + ".stale"
	if st, err := os.Stat(out); err != nil || !st.Mode().IsRegular() {
		return stale, nil // nothing there (or not a file: writing will say so)
	}
	if err := os.Rename(out, stale); err != nil {
		return "", fmt.Errorf("--out %s: an earlier results file is there and cannot be moved aside: %w", out, err)
	}
	return stale, nil
}

// keptStale says where the earlier results are when the run wrote none
// (*stale is cleared once the new results are written).
func keptStale(stale *string, stderr io.Writer) {
	if *stale == "" {
		return
	}
	if _, err := os.Stat(*stale); err == nil {
		fmt.Fprintf(stderr, "flowrun: no new results; the earlier ones are in %s\n", *stale)
	}
}

// interruptible calls fn with a context that SIGINT or SIGTERM cancels,
// and marks the error fn returns after such a signal as interrupted (exit
// code 130). After the first signal a second one kills flowrun at once.
func interruptible(cmd *cobra.Command, fn func(context.Context) error) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)
	err := fn(ctx)
	if err != nil && ctx.Err() != nil && cmd.Context().Err() == nil {
		return interruptedError{err}
	}
	return err
}

// runGraph loads, validates and runs one graph (see runValidated). The
// builtins' options are tried first, as validate tries them, so that a bad
// option is an invalid graph (exit 2, at its key and line) in both.
func runGraph(ctx context.Context, path string, f runFlags, stderr io.Writer) (*results.Results, error) {
	g, err := validateGraph(path, f.sets, true)
	if err != nil {
		return nil, err
	}
	return runValidated(ctx, g, path, f, stderr)
}

// runValidated runs g, validated from the graph file at path with f.sets,
// with its own plugin host, bus and telemetry, and tears them all down
// before returning.
func runValidated(ctx context.Context, g *graph.Graph, path string, f runFlags, stderr io.Writer) (*results.Results, error) {
	// The bar carries the run's log lines (and plugins' output) above it.
	bar := summary.NewProgress(stderr, f.quiet)
	level := slog.LevelWarn
	if f.quiet {
		level = slog.LevelError
	}
	log := slog.New(slog.NewTextHandler(bar, &slog.HandlerOptions{Level: level}))
	hazards, err := engine.ParseHazardMode(f.hazards)
	if err != nil {
		return nil, usageError{err}
	}
	cfg := g.Config
	runID := f.runID
	if runID == "" {
		runID = engine.NewRunID()
	} else if !validRunID(runID) {
		return nil, usageError{fmt.Errorf("--run-id %q: use letters, digits, '_' and '-' (it is part of NATS subjects)", runID)}
	}
	ckpt, err := f.ckpt.options(cfg.Name)
	if err != nil {
		return nil, err
	}

	spec := cfg.Tracing.Exporter
	if f.trace != "" {
		spec = f.trace
	}
	tel, err := telemetry.Setup(ctx, spec, telemetry.Resource{
		Graph: cfg.Name, RunID: runID, Version: version,
		Attributes: map[string]string{"flowrun.devices": deviceProfiles(cfg)},
	}, telemetry.WithLogger(log))
	if err != nil {
		return nil, usageError{err}
	}
	var collectorMissing string
	if !f.quiet {
		collectorMissing = checkCollector(spec, bar)
	}
	defer func() {
		if err := tel.Shutdown(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintf(bar, "flowrun: spans not exported%s: %v (the run and its results are unaffected)\n", collectorMissing, err)
		}
	}()
	host, err := newHost(tel.TracerProvider(), bar, f.quiet)
	if err != nil {
		return nil, err
	}
	defer host.Close()
	if err := pinPlugins(host, cfg); err != nil {
		return nil, usageError{err}
	}

	hint, err := announcePlacement(cfg, f, path, runID, bar) // worker.go
	if err != nil {
		return nil, err
	}
	conn, stop, err := connectBus(cfg, f, log)
	if err != nil {
		return nil, err
	}
	defer stop()

	defer bar.Finish()
	shards, err := startShards(ctx, cfg, f, conn, runID, log)
	if err != nil {
		return nil, err
	}
	defer shards.stop()
	rec, err := f.record.start(g, path, f.sets, &ckpt, f.ckpt.dir != "", f.quiet)
	if err != nil {
		return nil, err
	}
	if rec != nil {
		f.recorder = rec.w
	}
	res, err := engine.Run(ctx, engine.Options{
		Graph: g, Stages: stages(), Plugins: locatedOpener{host, cfg}, Bus: conn,
		TracerProvider: tel.TracerProvider(), Logger: log, Progress: bar.Update, RunID: runID,
		CheckHazards: hazards, Modeled: f.modeled, Checkpoint: ckpt, Record: f.recorder, WorkerHint: hint,
		Tables: shards.tables(),
	})
	if rerr := rec.finish(res, err, bar); rerr != nil && err == nil {
		return nil, rerr
	}
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return nil, fmt.Errorf("run %s interrupted; no results written", runID)
		}
		return nil, checkpointFailure(openFailure(err, path, f.sets), path, f.sets)
	}
	res.File = path
	shards.report(res)
	if res.Dataset, err = datasetUse(cfg.Dataset); err != nil {
		return nil, err
	}
	return res, nil
}

// deviceProfiles names the run's devices and their plugins for the trace's
// resource, e.g. "gpu=builtin:hbm,host=builtin:cpu-dram".
func deviceProfiles(cfg *config.Config) string {
	names := make([]string, 0, len(cfg.Devices))
	for name, d := range cfg.Devices {
		names = append(names, name+"="+d.Plugin)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// spansOnStdout reports whether the run's spans went to stdout: --trace
// stdout, or no --trace and the graph's tracing.exporter (in the config
// as read, echo) stdout.
func spansOnStdout(flag string, echo map[string]any) bool {
	if flag != "" {
		return flag == "stdout"
	}
	tracing, _ := echo["tracing"].(map[string]any)
	return tracing["exporter"] == "stdout"
}

// printResultsJSON writes r as results.json has it, for run --json.
func printResultsJSON(w io.Writer, r *results.Results) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	_, err = w.Write(append(data, '\n'))
	return err
}
