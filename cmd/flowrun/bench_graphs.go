package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/flowrun/flowrun/framework/bench"
	"github.com/flowrun/flowrun/framework/clock"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/results"
)

type benchGraphsFlags struct {
	sets    []string
	sweeps  []string
	warmup  int
	json    bool
	out     string
	quiet   bool
	shadows bool
}

func newBenchCmdGraphs() *cobra.Command {
	var f benchGraphsFlags
	cmd := &cobra.Command{
		Use:   "bench GRAPH...",
		Short: "Run graphs on the same data and compare them side by side",
		Long: `Run several graphs one after another in this process, on the same data (the
same seed and --set overrides for each), and print one table: iteration time
per batch (wall, measured; and modeled on the devices' cost models), speedup
over the first graph on each clock, cache hit rate, bytes each link carried
per batch, and the model digest (exact graphs end with the same one).

  flowrun bench graphs/no-cache.yaml graphs/static-cache.yaml \
      graphs/strawman.yaml graphs/scratchpipe.yaml

--sweep KEY=V1,V2,... runs every graph once per value (repeatable: every
combination, the first key outermost); speedups compare graphs at the same
point. A graph that is invalid at a point (say a scratchpad smaller than
its window) gets a row with the reason and the others still run.
--warmup N times the modeled clock from batch N on (a cache warming up
has misses but no victims yet), up to the last batches the end of the run
overlaps (the future window + 1 of them), and uses that figure in the
modeled columns; it times the run's own modeled schedule, which the
runtime hands over at the end of the run.
--shadows, when every swept key is cache.size or cache.plugin, runs each
graph once with a shadow stage beside its plan stage, one shadow policy per
point, and takes each point's hit rate, misses, evictions and bytes from
results.shadows (rows marked "from shadows"; no time or digest of their
own). It falls back to a run per point, saying why, when another key is
swept, the graph has no plan stage, or a point is invalid (a policy the
graph refuses as its cache, which it refuses as a shadow too).
--json prints the whole comparison as JSON instead of the table (each run's
results.json included), --out FILE writes that JSON to FILE as well; flowrun
report draws it. Exit codes: 0 all ran, 1 some run failed, 2 bad usage,
130 interrupted.

Subcommands measure single plugins: flowrun bench kernel --help.`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.json && f.quiet {
				return usageError{errors.New("--json and --quiet: choose one (--json prints only the JSON)")}
			}
			sweep, err := bench.ParseSweeps(f.sweeps)
			if err != nil {
				return usageError{err}
			}
			if f.warmup < 0 {
				return usageError{fmt.Errorf("--warmup %d: must be ≥ 0", f.warmup)}
			}
			quiet := f.quiet || f.json
			if f.shadows && len(sweep) == 0 {
				return usageError{errors.New("--shadows sweeps the cache: give --sweep cache.size=... or cache.plugin=...")}
			}
			o := bench.Options{Graphs: args, Sets: f.sets, Sweep: sweep, Warmup: f.warmup, Shadows: f.shadows}
			if !quiet {
				o.Log = cmd.ErrOrStderr()
			}
			var rep *bench.Comparison
			err = interruptible(cmd, func(ctx context.Context) (err error) {
				rep, err = bench.Compare(ctx, benchRunner{quiet: quiet, stderr: cmd.ErrOrStderr()}, o)
				return err
			})
			if err != nil {
				return err
			}
			if err := f.write(cmd.OutOrStdout(), rep); err != nil {
				return err
			}
			if n := rep.Failed(); n > 0 {
				return fmt.Errorf("%d of %d runs failed (see the table)", n, len(rep.Runs))
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.sets, "set", nil, "override a key of every graph, `key=value` (repeatable)")
	fl.StringArrayVar(&f.sweeps, "sweep", nil, "run every graph once per value, `key=v1,v2,...` (repeatable: every combination)")
	fl.IntVar(&f.warmup, "warmup", 0, "leave the first `N` training batches out of the modeled iteration time")
	fl.BoolVar(&f.shadows, "shadows", false, "sweep cache.size and cache.plugin by shadow policies in one run per graph (full runs where it cannot, saying why)")
	fl.BoolVar(&f.json, "json", false, "print the comparison as JSON instead of the table")
	fl.StringVar(&f.out, "out", "", "also write the comparison as JSON to `FILE`")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print nothing but errors")
	return cmd
}

// write writes the comparison to --out, and prints it as JSON (--json),
// as the table, or not at all (--quiet).
func (f benchGraphsFlags) write(stdout io.Writer, rep *bench.Comparison) error {
	if f.out != "" {
		if err := results.WriteJSON(f.out, rep); err != nil {
			return err
		}
	}
	switch {
	case f.json:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	case !f.quiet:
		bench.WriteTable(stdout, rep)
		if f.out != "" {
			fmt.Fprintf(stdout, "%-12s %s\n", "results", f.out)
		}
	}
	return nil
}

// benchRunner checks and runs bench's graphs as flowrun run does, with
// builtins' options tried up front and without hazard checks.
type benchRunner struct {
	quiet  bool
	stderr io.Writer
}

func (b benchRunner) Check(path string, sets []string) (bench.Graph, error) {
	g, err := validateGraph(path, sets, true)
	if err != nil {
		return nil, err
	}
	return benchGraph{g: g, path: path, runner: b}, nil
}

// benchGraph is one graph validated for bench.
type benchGraph struct {
	g      *graph.Graph
	path   string
	runner benchRunner
}

func (g benchGraph) Name() string { return g.g.Config.Name }

// Run runs the graph; with modeled, the runtime hands over its modeled
// timeline at the end of the run.
func (g benchGraph) Run(ctx context.Context, modeled bool) (*results.Results, *bench.Modeled, error) {
	f := runFlags{quiet: g.runner.quiet, hazards: "off"}
	var m *bench.Modeled
	if modeled {
		f.modeled = func(tl *clock.Timeline, lookahead int) { m = modeledSchedule(tl, lookahead) }
	}
	res, err := runValidated(ctx, g.g, g.path, f, g.runner.stderr)
	return res, m, err
}

// modeledSchedule is what bench needs of a run's modeled timeline.
func modeledSchedule(tl *clock.Timeline, lookahead int) *bench.Modeled {
	return &bench.Modeled{Batches: tl.Batches, Lookahead: lookahead, Completion: tl.Completion}
}
