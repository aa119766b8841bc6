package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flowrun/flowrun/framework/bench"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/search"
)

type searchFlags struct {
	sets    []string
	sweeps  []string
	qps     []float64
	slaMs   float64
	targets []float64
	minNDCG []float64
	json    bool
	out     string
	quiet   bool
}

func newSearchCmd() *cobra.Command {
	var f searchFlags
	cmd := &cobra.Command{
		Use:   "search GRAPH...",
		Short: "Design-space search: quality and modeled p99 of every design at every QPS, and the Pareto frontier",
		Long: `Run every design once and set its quality against its tail latency under load
(RecPipe's design-space exploration, Sec. 5). A design is a graph file at a
point of --sweep: stages are graph files, and the model of a stage, the
items a filter keeps and the device a stage runs on are keys like any other
(stages.keep.k, stages.front.model, stages.back.compute_device,
devices.host.plugin).

Each design runs once, as flowrun bench runs it. Its quality is the NDCG of
the list the graph serves (measured: real scoring of the run's queries);
its latency comes from the graph's serving section, which the search sets
(serving.qps = the first --qps, serving.sweep_qps = the others, serving.sla_ms
= --sla-ms), so the run's per-query modeled demands are replayed at every
QPS with one arrival stream and no second run. Other serving keys
(servers, queries, demand, seed) are the graph's or --set's.

It prints every design's NDCG and p99 per QPS (overload where the QPS is at
or above the bottleneck's capacity: no p99, never a frontier point), the
quality–p99 Pareto frontier at each QPS (a design is off it when another is
at least as good in NDCG and p99 and better in one; of designs with exactly
the same NDCG and p99 the first listed stands), and the best design per
latency target (--targets-ms, default --sla-ms): the highest NDCG whose p99
meets it; with --min-ndcg, the fastest design per quality target (the
lowest p99 whose NDCG reaches it: RecPipe's iso-quality). Latency is
modeled, quality measured.

  flowrun search graphs/recpipe-1stage.yaml graphs/recpipe-2stage.yaml \
      --sweep recpipe-2stage:stages.keep.k=64,256,1024 \
      --set serving.servers.host=64 --qps 500,2000,4000 --targets-ms 10,25

--sweep KEY=V1,V2,... sweeps KEY in every graph (every combination, the
first key outermost); --sweep GRAPH:KEY=V1,... only in the graph whose file
or file name without extension is GRAPH (after the common keys), for keys
only some graphs have. A design invalid at its point gets a row with the
reason and counts as failed.

--json prints the result as JSON (kind flowrun-search), --out FILE writes
it to FILE as well; flowrun report draws the frontier from it. Exit codes:
0 all ran, 1 some design failed, 2 bad usage, 130 interrupted.`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, args)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.sets, "set", nil, "override a key of every design, `key=value` (repeatable)")
	fl.StringArrayVar(&f.sweeps, "sweep", nil, "designs: every graph once per value, `key=v1,v2,...` (repeatable: every combination)")
	fl.Float64SliceVar(&f.qps, "qps", nil, "offered loads to replay every design at, `q1,q2,...` (required)")
	fl.Float64Var(&f.slaMs, "sla-ms", 0, "latency SLA in `ms`: each report's share within it (serving.sla_ms), and the default target")
	fl.Float64SliceVar(&f.targets, "targets-ms", nil, "latency targets in ms to pick the best design for, `t1,t2,...` (default: --sla-ms)")
	fl.Float64SliceVar(&f.minNDCG, "min-ndcg", nil, "quality targets to pick the fastest design reaching each, `q1,q2,...` (iso-quality)")
	fl.BoolVar(&f.json, "json", false, "print the result as JSON instead of the tables")
	fl.StringVar(&f.out, "out", "", "also write the result as JSON to `FILE`")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print nothing but errors")
	return cmd
}

// run checks the flags, searches and prints.
func (f searchFlags) run(cmd *cobra.Command, graphs []string) error {
	if f.json && f.quiet {
		return usageError{errors.New("--json and --quiet: choose one (--json prints only the JSON)")}
	}
	sweep, perGraph, err := parseSearchSweeps(f.sweeps, graphs)
	if err != nil {
		return usageError{err}
	}
	o := search.Options{Graphs: graphs, Sets: f.sets, Sweep: sweep, GraphSweep: perGraph, QPS: f.qps, SLAMs: f.slaMs, TargetsMs: f.targets, QualityTargets: f.minNDCG}
	if len(f.qps) == 0 {
		return usageError{errors.New("--qps: give the offered loads, e.g. --qps 100,500,1000")}
	}
	if err := o.Validate(); err != nil {
		return usageError{err}
	}
	quiet := f.quiet || f.json
	if !quiet {
		o.Log = cmd.ErrOrStderr()
	}
	var res *search.Result
	err = interruptible(cmd, func(ctx context.Context) (err error) {
		res, err = search.Search(ctx, benchRunner{quiet: quiet, stderr: cmd.ErrOrStderr()}, o)
		return err
	})
	if err != nil {
		return err
	}
	if err := f.write(cmd.OutOrStdout(), res); err != nil {
		return err
	}
	if n := res.Failed(); n > 0 {
		return fmt.Errorf("%d of %d designs failed (see the table)", n, len(res.Designs))
	}
	return nil
}

// parseSearchSweeps parses --sweep flags: KEY=V1,... for every graph,
// GRAPH:KEY=V1,... for the graph whose file (as given, or its name
// without directory and extension) is GRAPH. Only the key is split at
// ':', so values may hold one (builtin:NAME).
func parseSearchSweeps(flags, graphs []string) ([]bench.Sweep, map[string][]bench.Sweep, error) {
	var all []string
	scoped := map[string][]string{}
	for _, s := range flags {
		key, vals, _ := strings.Cut(s, "=")
		scope, key, ok := strings.Cut(key, ":")
		if !ok {
			all = append(all, s)
			continue
		}
		g := graphByName(graphs, strings.TrimSpace(scope))
		if g == "" {
			return nil, nil, fmt.Errorf("--sweep %q: %q is not one of the graphs searched", s, scope)
		}
		scoped[g] = append(scoped[g], key+"="+vals)
	}
	sweep, err := bench.ParseSweeps(all)
	if err != nil {
		return nil, nil, err
	}
	var perGraph map[string][]bench.Sweep
	for g, list := range scoped {
		// Parsed with the common keys, so that one given twice is refused.
		both, err := bench.ParseSweeps(append(append([]string(nil), all...), list...))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", g, err)
		}
		if perGraph == nil {
			perGraph = map[string][]bench.Sweep{}
		}
		perGraph[g] = both[len(sweep):]
	}
	return sweep, perGraph, nil
}

// graphByName is the graph file that name is, as given or as its stem.
func graphByName(graphs []string, name string) string {
	for _, g := range graphs {
		if g == name || strings.TrimSuffix(filepath.Base(g), filepath.Ext(g)) == name {
			return g
		}
	}
	return ""
}

// write writes the result to --out, and prints it as JSON (--json), as
// the tables, or not at all (--quiet).
func (f searchFlags) write(stdout io.Writer, res *search.Result) error {
	if f.out != "" {
		if err := results.WriteJSON(f.out, res); err != nil {
			return err
		}
	}
	switch {
	case f.json:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	case !f.quiet:
		search.WriteTable(stdout, res)
		if f.out != "" {
			fmt.Fprintf(stdout, "\n%-12s %s\n", "results", f.out)
		}
	}
	return nil
}
