// Package bench compares graphs and measures kernels: `flowrun bench
// GRAPH...` runs several graphs on the same data at every point of a
// sweep and sets their figures side by side (Comparison, Compare,
// WriteTable), and `flowrun bench kernel` times one kernel operator on
// tables in shared-memory regions (KernelConfig, RunKernel,
// WriteKernelTable). A sweep of the cache alone can take one run per graph
// with a shadow policy per point instead (Options.Shadows, ShadowRunner).
//
// The package runs nothing itself: a Runner checks and runs each graph,
// and a kernel.Kernel is handed in, so the command wires it to the runtime
// and the plugin host while a test hands it fakes. It imports
// framework/results, framework/summary (the terminal layout), the SDK and
// framework/stages/cast's Cast (Tensor Casting Alg. 2, to cast the index
// the casted gather-reduce reads); not the runtime, the plugin host or the
// graph, and it names no plugin or stage kind.
package bench

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/flowrun/flowrun/framework/results"
)

// Kind marks the JSON `flowrun bench --json` writes, so that report
// tells it from a results.json.
const Kind = "flowrun-bench"

// Comparison is what `flowrun bench GRAPH... --json` prints: every run of
// every graph at every sweep point, with its figures side by side.
type Comparison struct {
	Kind string `json:"kind"`
	// Graphs are the graph files in the order given; the first is the
	// baseline of every speedup.
	Graphs []string `json:"graphs"`
	// Sets are the --set overrides applied to every run.
	Sets []string `json:"sets,omitempty"`
	// Sweep is the swept keys and their values; the runs cover every
	// combination, the first key outermost.
	Sweep []Sweep `json:"sweep,omitempty"`
	// Warmup is --warmup: the training batches each run's modeled
	// iteration after warm-up leaves out.
	Warmup int `json:"warmup,omitempty"`
	// SweptBy, with --shadows, says how the sweep's figures were got:
	// SweptByShadows (one run per graph, a shadow policy per point) or
	// SweptByRuns (a run per point), and SweepNote why not by shadows.
	SweptBy   string `json:"swept_by,omitempty"`
	SweepNote string `json:"sweep_note,omitempty"`
	Baseline  string `json:"baseline"`
	Runs      []Run  `json:"runs"`
	// DigestsEqual: at every sweep point, every run that finished ended
	// with the same model digest (the exactness of DESIGN.md §2.4).
	DigestsEqual bool      `json:"digests_equal"`
	Started      time.Time `json:"started"`
	WallMs       float64   `json:"wall_ms"`
}

// Sweep is one --sweep key and its values.
type Sweep struct {
	Key    string   `json:"key"`
	Values []string `json:"values"`
}

// Run is one graph at one sweep point.
type Run struct {
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
	Speedup *Speedup `json:"speedup,omitempty"`
	// HitRate is the cache's hit rate (absent without a cache).
	HitRate *float64 `json:"hit_rate,omitempty"`
	// LinkBytesPerBatch are the bytes each link carried per training
	// batch (cache rows: to_device, to_host).
	LinkBytesPerBatch map[string]float64 `json:"bytes_per_link_per_batch,omitempty"`
	Digest            string             `json:"digest,omitempty"`
	// FromShadows: the figures are a shadow policy's in one run of the
	// graph (Shadow), not a run's own; there is no time or digest then.
	FromShadows bool            `json:"from_shadows,omitempty"`
	Shadow      *results.Shadow `json:"shadow,omitempty"`
	// Accuracy is the run's held-out accuracy (threshold 0.5), and
	// AccuracyDropPct its relative drop against the first graph's at the
	// same point, the mixed-precision paper's Eq. 1:
	// (Acc_first − Acc)/Acc_first · 100 (negative: more accurate).
	Accuracy        *float64 `json:"accuracy,omitempty"`
	AccuracyDropPct *float64 `json:"accuracy_drop_pct,omitempty"`
	// Results is the run's whole results.json.
	Results *results.Results `json:"results,omitempty"`
}

// Speedup is a speedup on both clocks.
type Speedup struct {
	Wall    float64 `json:"wall"`
	Modeled float64 `json:"modeled,omitempty"`
}

// Runner checks the graphs a comparison runs, all of them before the
// first run, so that a bad graph shows in seconds.
type Runner interface {
	// Check loads and validates the graph file at path with the overrides
	// sets (--set, then the sweep point's) and returns it ready to run.
	Check(path string, sets []string) (Graph, error)
}

// Graph is one checked graph at one point.
type Graph interface {
	// Name is the graph's name (its config's name).
	Name() string
	// Run runs the graph to the end. With modeled it also returns the
	// run's modeled schedule (nil where the run has none).
	Run(ctx context.Context, modeled bool) (*results.Results, *Modeled, error)
}

// Options are what Compare runs.
type Options struct {
	// Graphs are the graph files; the first is the baseline.
	Graphs []string
	// Sets are overrides applied to every run.
	Sets []string
	// Sweep runs every graph at every combination of its values.
	Sweep []Sweep
	// Warmup leaves the first Warmup batches out of the modeled
	// iteration time (0: the run's own figure).
	Warmup int
	// Shadows sweeps cache.size and cache.plugin by shadow policies in one
	// run of each graph where it can, and by full runs, saying why, where
	// it cannot (see ShadowRunner).
	Shadows bool
	// Log, when set, gets a line as each run starts.
	Log io.Writer
}

// ParseSweeps parses --sweep key=v1,v2,... flags.
func ParseSweeps(flags []string) ([]Sweep, error) {
	var out []Sweep
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
		out = append(out, Sweep{Key: key, Values: values})
	}
	return out, nil
}

// Points lists every combination of the sweep's values as key=value
// overrides, the first key outermost; one empty point without a sweep.
func Points(sweep []Sweep) [][]string {
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

// planned is one run of a comparison, checked and not yet run.
type planned struct {
	run Run
	g   Graph
}

// Compare runs every graph at every sweep point, one run at a time, and
// gathers their figures. A graph invalid or failing at a point gets a row
// with the error; a graph invalid without a sweep is the caller's error,
// returned as Check returned it; an interrupt stops everything.
func Compare(ctx context.Context, r Runner, o Options) (*Comparison, error) {
	c := &Comparison{Kind: Kind, Graphs: o.Graphs, Sets: o.Sets, Sweep: o.Sweep, Warmup: o.Warmup, Started: time.Now()}
	if o.Shadows {
		done, err := c.tryShadows(ctx, r, o)
		if err != nil {
			return nil, err
		}
		if done {
			return c, nil
		}
	}
	plans, err := check(r, o)
	if err != nil {
		return nil, err
	}
	if len(plans) > 0 {
		c.Baseline = plans[0].run.Graph
	}
	for i, p := range plans {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		run := p.run
		if run.Error == "" {
			if o.Log != nil {
				fmt.Fprintln(o.Log, strings.TrimSpace(fmt.Sprintf("bench [%d/%d] %s %s", i+1, len(plans), run.File, strings.Join(run.Point, " "))))
			}
			if err := run.execute(ctx, p.g, o.Warmup); err != nil {
				return nil, err
			}
		}
		c.Runs = append(c.Runs, run)
	}
	c.speedups(len(o.Graphs))
	c.WallMs = float64(time.Since(c.Started).Microseconds()) / 1e3
	return c, nil
}

// tryShadows sweeps by shadows where o allows it (done true), else notes
// why the sweep takes full runs.
func (c *Comparison) tryShadows(ctx context.Context, r Runner, o Options) (done bool, err error) {
	c.SweptBy = SweptByRuns
	if c.SweepNote = shadowRefusal(r, o); c.SweepNote != "" {
		return false, nil
	}
	if c.SweepNote, err = compareShadows(ctx, r.(ShadowRunner), o, c); err != nil || c.SweepNote != "" {
		return false, err
	}
	c.Baseline = c.Runs[0].Graph
	c.speedups(len(o.Graphs))
	c.WallMs = float64(time.Since(c.Started).Microseconds()) / 1e3
	return true, nil
}

// check checks every graph at every point before anything runs.
func check(r Runner, o Options) ([]planned, error) {
	var plans []planned
	for _, pt := range Points(o.Sweep) {
		for _, path := range o.Graphs {
			p := planned{run: Run{File: path, Point: pt}}
			g, err := r.Check(path, append(append([]string(nil), o.Sets...), pt...))
			switch {
			case err != nil && len(o.Sweep) == 0:
				// No sweep made it invalid: the graph or --set is wrong.
				return nil, err
			case err != nil:
				p.run.Graph = fileStem(path)
				p.run.Error = err.Error()
			default:
				p.run.Graph, p.g = g.Name(), g
			}
			plans = append(plans, p)
		}
	}
	return plans, nil
}

// execute runs g and fills the run's figures, or its error; it returns
// an error only when ctx stopped the run.
func (r *Run) execute(ctx context.Context, g Graph, warmup int) error {
	res, m, err := g.Run(ctx, warmup > 0)
	switch {
	case err != nil && ctx.Err() != nil:
		return err
	case err != nil:
		r.Error = err.Error()
		return nil
	}
	r.fill(res)
	if m != nil {
		if r.ModeledAfterWarmupMs, err = m.SteadyMs(warmup); err != nil {
			r.Error = fmt.Sprintf("modeled clock after warm-up: %v", err)
		}
	}
	return nil
}

// fileStem is a file's base name without its extension: a graph's name
// when its file cannot be decoded.
func fileStem(path string) string {
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}

// fill takes the run's figures from its results.
func (r *Run) fill(res *results.Results) {
	r.Graph, r.Batches, r.IterationMs, r.Digest, r.Results = res.Graph, res.Batches, res.IterationMs, res.Digest, res
	r.Accuracy = res.Metrics.Accuracy
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

// fillShadow takes the run's figures from a shadow of a run of batches
// training batches.
func (r *Run) fillShadow(batches int, s *results.Shadow) {
	hr := s.HitRate
	r.Batches, r.HitRate, r.Shadow = batches, &hr, s
	if batches > 0 && len(s.LinkBytes) > 0 {
		r.LinkBytesPerBatch = map[string]float64{}
		for k, v := range s.LinkBytes {
			r.LinkBytesPerBatch[k] = float64(v) / float64(batches)
		}
	}
}

// modeled is the run's modeled iteration time: after warm-up when the
// bench leaves one out.
func (r *Run) modeled(warmup int) float64 {
	if warmup > 0 {
		return r.ModeledAfterWarmupMs
	}
	return r.IterationMs.Modeled
}

// speedups sets every run's speedup over the first graph at its point
// (runs come in groups of n graphs per point) and whether the digests at
// each point agree.
func (c *Comparison) speedups(n int) {
	c.DigestsEqual = true
	for start := 0; start+n <= len(c.Runs); start += n {
		base := c.Runs[start]
		digest := ""
		for i := start; i < start+n; i++ {
			r := &c.Runs[i]
			if r.Error != "" {
				continue
			}
			if digest == "" {
				digest = r.Digest
			} else if r.Digest != digest {
				c.DigestsEqual = false
			}
			if base.Error != "" || r.IterationMs.Wall <= 0 {
				continue
			}
			s := &Speedup{Wall: base.IterationMs.Wall / r.IterationMs.Wall}
			if bm, rm := base.modeled(c.Warmup), r.modeled(c.Warmup); bm > 0 && rm > 0 {
				s.Modeled = bm / rm
			}
			r.Speedup = s
		}
	}
	c.accuracyDrops(n)
}

// accuracyDrops sets every run's relative accuracy drop against the first
// graph at its point (Eq. 1 of the mixed-precision paper), where both
// have a held-out accuracy and the first's is not 0.
func (c *Comparison) accuracyDrops(n int) {
	for start := 0; start+n <= len(c.Runs); start += n {
		base := c.Runs[start].Accuracy
		if base == nil || *base == 0 {
			continue
		}
		for i := start; i < start+n; i++ {
			if a := c.Runs[i].Accuracy; a != nil {
				d := (*base - *a) / *base * 100
				c.Runs[i].AccuracyDropPct = &d
			}
		}
	}
}

// hasAccuracy reports whether any run has an accuracy drop, so that the
// table shows the accuracy columns.
func (c *Comparison) hasAccuracy() bool {
	for _, r := range c.Runs {
		if r.AccuracyDropPct != nil {
			return true
		}
	}
	return false
}

// Failed counts the runs without figures.
func (c *Comparison) Failed() int {
	n := 0
	for _, r := range c.Runs {
		if r.Error != "" {
			n++
		}
	}
	return n
}
