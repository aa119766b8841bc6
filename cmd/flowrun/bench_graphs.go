package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/flowrun/flowrun/framework/clock"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/results"
)

// benchKind marks the JSON `flowrun bench --json` writes, so that report
// tells it from a results.json.
const benchKind = "flowrun-bench"

// benchReport is what `flowrun bench GRAPH... --json` prints: every run of
// every graph at every sweep point, with its figures side by side.
type benchReport struct {
	Kind string `json:"kind"`
	// Graphs are the graph files in the order given; the first is the
	// baseline of every speedup.
	Graphs []string `json:"graphs"`
	// Sets are the --set overrides applied to every run.
	Sets []string `json:"sets,omitempty"`
	// Sweep is the swept keys and their values; the runs cover every
	// combination, the first key outermost.
	Sweep []benchSweep `json:"sweep,omitempty"`
	// Warmup is --warmup: the training batches each run's modeled
	// iteration after warm-up leaves out.
	Warmup   int        `json:"warmup,omitempty"`
	Baseline string     `json:"baseline"`
	Runs     []benchRun `json:"runs"`
	// DigestsEqual: at every sweep point, every run that finished ended
	// with the same model digest (the exactness of DESIGN.md §2.4).
	DigestsEqual bool      `json:"digests_equal"`
	Started      time.Time `json:"started"`
	WallMs       float64   `json:"wall_ms"`
}

// benchSweep is one --sweep key and its values.
type benchSweep struct {
	Key    string   `json:"key"`
	Values []string `json:"values"`
}

// benchRun is one graph at one sweep point.
type benchRun struct {
	Graph string `json:"graph"`
	File  string `json:"file"`
	// Point is the sweep's key=value overrides of this run, in --sweep
	// order (empty without --sweep).
	Point []string `json:"point,omitempty"`
	// Error says why the run has no figures: the graph is invalid at this
	// point, or it failed.
	Error   string `json:"error,omitempty"`
	Batches int    `json:"batches,omitempty"`
	// IterationMs is time per batch over the whole run: wall measured,
	// modeled on the devices' cost models.
	IterationMs results.Iteration `json:"iteration_ms"`
	// ModeledAfterWarmupMs is the steady modeled iteration time of the
	// batches after the first Warmup (with --warmup).
	ModeledAfterWarmupMs float64 `json:"modeled_after_warmup_ms,omitempty"`
	// Speedup is the baseline's iteration time over this run's, at the
	// same sweep point, on each clock (modeled only where both have one;
	// after warm-up with --warmup).
	Speedup *benchSpeedup `json:"speedup,omitempty"`
	// HitRate is the cache's hit rate (absent without a cache).
	HitRate *float64 `json:"hit_rate,omitempty"`
	// LinkBytesPerBatch are the bytes each link carried per training
	// batch (cache rows: to_device, to_host).
	LinkBytesPerBatch map[string]float64 `json:"bytes_per_link_per_batch,omitempty"`
	Digest            string             `json:"digest,omitempty"`
	// Results is the run's whole results.json.
	Results *results.Results `json:"results,omitempty"`
}

// benchSpeedup is a speedup on both clocks.
type benchSpeedup struct {
	Wall    float64 `json:"wall"`
	Modeled float64 `json:"modeled,omitempty"`
}

type benchGraphsFlags struct {
	sets   []string
	sweeps []string
	warmup int
	json   bool
	out    string
	quiet  bool
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
			sweep, err := parseSweeps(f.sweeps)
			if err != nil {
				return usageError{err}
			}
			if f.warmup < 0 {
				return usageError{fmt.Errorf("--warmup %d: must be ≥ 0", f.warmup)}
			}
			var rep *benchReport
			err = interruptible(cmd, func(ctx context.Context) (err error) {
				rep, err = benchGraphs(ctx, args, f.sets, sweep, f.warmup, f.quiet || f.json, cmd.ErrOrStderr())
				return err
			})
			if err != nil {
				return err
			}
			if f.out != "" {
				if err := results.WriteJSON(f.out, rep); err != nil {
					return err
				}
			}
			switch {
			case f.json:
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			case !f.quiet:
				printBench(cmd.OutOrStdout(), rep)
				if f.out != "" {
					fmt.Fprintf(cmd.OutOrStdout(), "%-12s %s\n", "results", f.out)
				}
			}
			if n := rep.failed(); n > 0 {
				return fmt.Errorf("%d of %d runs failed (see the table)", n, len(rep.Runs))
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.sets, "set", nil, "override a key of every graph, `key=value` (repeatable)")
	fl.StringArrayVar(&f.sweeps, "sweep", nil, "run every graph once per value, `key=v1,v2,...` (repeatable: every combination)")
	fl.IntVar(&f.warmup, "warmup", 0, "leave the first `N` training batches out of the modeled iteration time")
	fl.BoolVar(&f.json, "json", false, "print the comparison as JSON instead of the table")
	fl.StringVar(&f.out, "out", "", "also write the comparison as JSON to `FILE`")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print nothing but errors")
	return cmd
}

// parseSweeps parses --sweep key=v1,v2,... flags.
func parseSweeps(flags []string) ([]benchSweep, error) {
	var out []benchSweep
	seen := map[string]bool{}
	for _, s := range flags {
		key, vals, ok := strings.Cut(s, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" || strings.TrimSpace(vals) == "" {
			return nil, fmt.Errorf("--sweep %q: want key=v1,v2,...", s)
		}
		if seen[key] {
			return nil, fmt.Errorf("--sweep %s given twice", key)
		}
		seen[key] = true
		var values []string
		for _, v := range strings.Split(vals, ",") {
			if v = strings.TrimSpace(v); v == "" {
				return nil, fmt.Errorf("--sweep %q: empty value", s)
			}
			values = append(values, v)
		}
		out = append(out, benchSweep{Key: key, Values: values})
	}
	return out, nil
}

// points lists every combination of the sweep's values as key=value
// overrides, the first key outermost; one empty point without a sweep.
func points(sweep []benchSweep) [][]string {
	pts := [][]string{nil}
	for _, s := range sweep {
		var next [][]string
		for _, p := range pts {
			for _, v := range s.Values {
				next = append(next, append(append([]string(nil), p...), s.Key+"="+v))
			}
		}
		pts = next
	}
	return pts
}

// benchGraphs runs every graph at every sweep point, one run at a time, and
// gathers their figures. A graph invalid or failing at a point gets a row
// with the error; an interrupt stops everything.
func benchGraphs(ctx context.Context, graphs, sets []string, sweep []benchSweep, warmup int, quiet bool, stderr io.Writer) (*benchReport, error) {
	rep := &benchReport{Kind: benchKind, Graphs: graphs, Sets: sets, Sweep: sweep, Warmup: warmup, Started: time.Now()}
	pts := points(sweep)
	// Check everything first: a bad graph shows in seconds, not after the
	// runs before it.
	type plan struct {
		run benchRun
		g   *graph.Graph
	}
	var plans []plan
	for _, pt := range pts {
		for _, path := range graphs {
			p := plan{run: benchRun{File: path, Point: pt}}
			g, err := validateGraph(path, append(append([]string(nil), sets...), pt...), true)
			switch {
			case err != nil && len(sweep) == 0:
				// No sweep made it invalid: the graph or --set is wrong.
				return nil, err
			case err != nil:
				p.run.Graph = fileStem(path)
				p.run.Error = err.Error()
			default:
				p.run.Graph, p.g = g.Config.Name, g
			}
			plans = append(plans, p)
		}
	}
	if len(plans) > 0 {
		rep.Baseline = plans[0].run.Graph
	}
	for i, p := range plans {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		r := p.run
		if r.Error == "" {
			if !quiet {
				fmt.Fprintln(stderr, strings.TrimSpace(fmt.Sprintf("bench [%d/%d] %s %s", i+1, len(plans), r.File, strings.Join(r.Point, " "))))
			}
			f := runFlags{quiet: quiet, hazards: "off"}
			var tl *clock.Timeline
			var lookahead int
			if warmup > 0 {
				f.modeled = func(t *clock.Timeline, la int) { tl, lookahead = t, la }
			}
			res, err := runValidated(ctx, p.g, r.File, f, stderr)
			switch {
			case err != nil && ctx.Err() != nil:
				return nil, err
			case err != nil:
				r.Error = err.Error()
			default:
				r.fill(res)
			}
			if err == nil && tl != nil {
				if r.ModeledAfterWarmupMs, err = steadyModeledMs(tl, lookahead, warmup); err != nil {
					r.Error = fmt.Sprintf("modeled clock after warm-up: %v", err)
				}
			}
		}
		rep.Runs = append(rep.Runs, r)
	}
	rep.speedups(len(graphs))
	rep.WallMs = float64(time.Since(rep.Started).Microseconds()) / 1e3
	return rep, nil
}

// fileStem is a file's base name without its extension: a graph's name
// when its file cannot be decoded, a report's label for an input file.
func fileStem(path string) string {
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}

// fill takes the run's figures from its results.
func (r *benchRun) fill(res *results.Results) {
	r.Graph, r.Batches, r.IterationMs, r.Digest, r.Results = res.Graph, res.Batches, res.IterationMs, res.Digest, res
	if c := res.Cache; c != nil {
		hr := c.HitRate
		r.HitRate = &hr
		if res.Batches > 0 && len(c.LinkBytes) > 0 {
			r.LinkBytesPerBatch = map[string]float64{}
			for k, v := range c.LinkBytes {
				r.LinkBytesPerBatch[k] = float64(v) / float64(res.Batches)
			}
		}
	}
}

// modeled is the run's modeled iteration time: after warm-up when the
// bench leaves one out.
func (r *benchRun) modeled(warmup int) float64 {
	if warmup > 0 {
		return r.ModeledAfterWarmupMs
	}
	return r.IterationMs.Modeled
}

// speedups sets every run's speedup over the first graph at its point
// (runs come in groups of n graphs per point) and whether the digests at
// each point agree.
func (rep *benchReport) speedups(n int) {
	rep.DigestsEqual = true
	for start := 0; start+n <= len(rep.Runs); start += n {
		base := rep.Runs[start]
		digest := ""
		for i := start; i < start+n; i++ {
			r := &rep.Runs[i]
			if r.Error != "" {
				continue
			}
			if digest == "" {
				digest = r.Digest
			} else if r.Digest != digest {
				rep.DigestsEqual = false
			}
			if base.Error != "" || r.IterationMs.Wall <= 0 {
				continue
			}
			s := &benchSpeedup{Wall: base.IterationMs.Wall / r.IterationMs.Wall}
			if bm, rm := base.modeled(rep.Warmup), r.modeled(rep.Warmup); bm > 0 && rm > 0 {
				s.Modeled = bm / rm
			}
			r.Speedup = s
		}
	}
}

func (rep *benchReport) failed() int {
	n := 0
	for _, r := range rep.Runs {
		if r.Error != "" {
			n++
		}
	}
	return n
}

// printBench writes the side-by-side table: one row per run, modeled
// figures labelled modeled, then whether the digests agree.
func printBench(w io.Writer, rep *benchReport) {
	swept := len(rep.Sweep) > 0
	t := table{align: "llrrrrrrrrl"}
	if !swept {
		t.align = "lrrrrrrrrl"
	}
	header := []string{"graph"}
	if swept {
		header = append(header, "point")
	}
	modeledHead := "modeled ms/batch"
	if rep.Warmup > 0 {
		modeledHead = fmt.Sprintf("modeled ms/batch (after %d)", rep.Warmup)
	}
	header = append(header, "batches", "wall ms/batch", modeledHead, "speedup wall", "speedup modeled",
		"hit rate", "to device/batch", "to host/batch", "digest")
	t.row(header...)
	var errs []string
	for _, r := range rep.Runs {
		cells := []string{r.Graph}
		if swept {
			cells = append(cells, strings.Join(r.Point, " "))
		}
		if r.Error != "" {
			cells = append(cells, "-", "failed", "-", "-", "-", "-", "-", "-", "-")
			errs = append(errs, fmt.Sprintf("%s %s: %s", r.File, strings.Join(r.Point, " "), firstLine(r.Error)))
			t.row(cells...)
			continue
		}
		dash := func(ok bool, s string) string {
			if !ok {
				return "-"
			}
			return s
		}
		sw, sm := "-", "-"
		if s := r.Speedup; s != nil {
			sw = fmt.Sprintf("%.2f×", s.Wall)
			sm = dash(s.Modeled > 0, fmt.Sprintf("%.2f×", s.Modeled))
		}
		hit := "-"
		if r.HitRate != nil {
			hit = fmt.Sprintf("%.1f%%", 100**r.HitRate)
		}
		link := func(k string) string {
			v, ok := r.LinkBytesPerBatch[k]
			return dash(ok, bytesIEC(int64(v)))
		}
		digest := r.Digest
		if len(digest) > 12 {
			digest = digest[:12]
		}
		cells = append(cells, fmt.Sprint(r.Batches),
			fmt.Sprintf("%.3f", r.IterationMs.Wall),
			dash(r.modeled(rep.Warmup) > 0, fmt.Sprintf("%.3f", r.modeled(rep.Warmup))),
			sw, sm, hit, link("to_device"), link("to_host"), digest)
		t.row(cells...)
	}
	t.write(w, "")
	fmt.Fprintln(w)
	clockNote := "steady state of the modeled schedule"
	if rep.Warmup > 0 {
		clockNote = fmt.Sprintf("steady state of the modeled schedule of the batches after the first %d", rep.Warmup)
	}
	fmt.Fprintf(w, "%-12s %s (wall: measured here, whole run; modeled: the devices' cost models, %s)\n",
		"baseline", rep.Baseline, clockNote)
	verdict := "every run at each point ends with the same model digest"
	if !rep.DigestsEqual {
		verdict = "DIFFER between runs at the same point"
	}
	fmt.Fprintf(w, "%-12s %s\n", "digests", verdict)
	for _, e := range errs {
		fmt.Fprintf(w, "%-12s %s\n", "failed", e)
	}
	fmt.Fprintf(w, "%-12s %s for %d runs\n", "wall", ms(rep.WallMs), len(rep.Runs))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
