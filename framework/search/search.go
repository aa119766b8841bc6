// Package search is RecPipe's design-space exploration (Gupta et al.,
// MICRO 2021, Sec. 5, Figs. 7-8): it runs every design once — a graph
// at a point of a sweep of its keys, so stages, the model of each stage,
// the items each filter keeps and the device each stage runs on are all
// just graph files and swept keys — takes the design's quality (the NDCG
// of the filter that serves the list) and its per-query modeled demands,
// replays those at every QPS asked for (the graph's serving section,
// serving.qps and serving.sweep_qps, set by the search: one run, every
// rate, common random numbers), and finds the quality–p99 Pareto
// frontier at each QPS and the best design within each latency target.
//
// It owns no sweep engine and no queue of its own: framework/bench's
// Compare runs the designs (checking all of them first, a design invalid
// at a point getting a row with the reason) and framework/serving, via
// the run's results, replays them. So a design's figures are exactly what
// `flowrun run` of that design with the same serving section reports. It
// imports framework/bench, framework/results and framework/serving (for
// their types); not the runtime, the graph or any stage, and it names no
// stage kind, model or device.
package search

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flowrun/flowrun/framework/bench"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/serving"
)

// Kind marks the JSON `flowrun search --json` writes, so that report
// tells it from a results.json or a bench comparison.
const Kind = "flowrun-search"

// Options are what Search runs.
type Options struct {
	// Graphs are the graph files; every one runs at every sweep point.
	Graphs []string
	// Sets are overrides applied to every design.
	Sets []string
	// Sweep is the design space beyond the graph files (every
	// combination, the first key outermost), for every graph.
	Sweep []bench.Sweep
	// GraphSweep are further swept keys of one graph (by its path as in
	// Graphs), after Sweep's: a key only some graphs have (the items a
	// frontend keeps) is swept in those only.
	GraphSweep map[string][]bench.Sweep
	// QPS are the offered loads every design is replayed at.
	QPS []float64
	// SLAMs, when > 0, is serving.sla_ms: each report gives the share of
	// queries within it.
	SLAMs float64
	// TargetsMs are the latency targets the best design is chosen for;
	// none: SLAMs alone when set.
	TargetsMs []float64
	// QualityTargets are NDCG levels the fastest design reaching each is
	// chosen for (iso-quality).
	QualityTargets []float64
	// Log, when set, gets a line as each run starts.
	Log io.Writer
}

// Result is what `flowrun search --json` prints.
type Result struct {
	Kind   string        `json:"kind"`
	Graphs []string      `json:"graphs"`
	Sets   []string      `json:"sets,omitempty"`
	Sweep  []bench.Sweep `json:"sweep,omitempty"`
	// GraphSweep are the keys swept in one graph only, by its file.
	GraphSweep map[string][]bench.Sweep `json:"graph_sweep,omitempty"`
	// QPS are the offered loads, in the order given; every design's
	// Serving has one entry per rate, in this order.
	QPS            []float64 `json:"qps"`
	SLAMs          float64   `json:"sla_ms,omitempty"`
	TargetsMs      []float64 `json:"targets_ms,omitempty"`
	QualityTargets []float64 `json:"quality_targets,omitempty"`
	// Clock is the latency's clock: always modeled (the replay of the
	// runs' modeled demands). Quality is measured: real scoring.
	Clock   string   `json:"clock"`
	Designs []Design `json:"designs"`
	// Frontiers has one entry per QPS, in QPS order.
	Frontiers []Frontier `json:"frontiers"`
	// Best has one entry per QPS and target, QPS outermost.
	Best []Best `json:"best,omitempty"`
	// Fastest has one entry per QPS and quality target, QPS outermost.
	Fastest []Fastest `json:"fastest,omitempty"`
	// Note warns where the designs' qualities are not alike: NDCG
	// measured at different depths (a filter's k, unless ndcg_k is set).
	Note    string    `json:"note,omitempty"`
	Started time.Time `json:"started"`
	WallMs  float64   `json:"wall_ms"`
}

// Design is one graph at one sweep point, run once.
type Design struct {
	// ID is the design's position in Designs (its name in the tables).
	ID    int      `json:"id"`
	Name  string   `json:"name"`
	Graph string   `json:"graph"`
	File  string   `json:"file"`
	Point []string `json:"point,omitempty"`
	// Error says why the design has no figures: invalid at its point,
	// failed, or nothing to replay.
	Error string `json:"error,omitempty"`
	// NDCG is the mean NDCG@NDCGK of the list the graph serves (its
	// results' metrics.ndcg: the sink filter's), over NDCGQueries queries
	// really scored; nil when the graph measures none.
	NDCG        *float64 `json:"ndcg,omitempty"`
	NDCGK       int      `json:"ndcg_k,omitempty"`
	NDCGQueries int      `json:"ndcg_queries,omitempty"`
	Batches     int      `json:"batches,omitempty"`
	Digest      string   `json:"digest,omitempty"`
	// ModeledMsPerQuery is the run's modeled iteration time: a query's
	// demand summed over the pipeline's steady state, with no queueing.
	ModeledMsPerQuery float64 `json:"modeled_ms_per_query,omitempty"`
	// Serving is the modeled replay at each QPS, in QPS order.
	Serving []Latency `json:"serving,omitempty"`
}

// Latency is a design's modeled serving at one QPS.
type Latency struct {
	QPS float64 `json:"qps"`
	// P50Ms, P99Ms and MeanMs are nil when overloaded.
	P50Ms     *float64 `json:"p50_ms,omitempty"`
	P99Ms     *float64 `json:"p99_ms,omitempty"`
	MeanMs    *float64 `json:"mean_ms,omitempty"`
	WithinSLA *float64 `json:"within_sla,omitempty"`
	// Overload, when set, is why there are no percentiles: the offered
	// load is at or above what the design's bottleneck serves.
	Overload    string  `json:"overload,omitempty"`
	Bottleneck  string  `json:"bottleneck,omitempty"`
	Utilisation float64 `json:"utilisation,omitempty"`
	CapacityQPS float64 `json:"capacity_qps,omitempty"`
	// Frontier: on the quality–p99 frontier at this QPS.
	Frontier bool `json:"frontier,omitempty"`
}

// Frontier is the quality–p99 Pareto frontier at one QPS: design IDs in
// ascending p99 (so ascending quality).
type Frontier struct {
	QPS     float64 `json:"qps"`
	Designs []int   `json:"designs"`
}

// Best is the best design at one QPS within one latency target: the
// highest NDCG whose modeled p99 is at most TargetMs; Design nil when
// none meets it.
type Best struct {
	QPS      float64  `json:"qps"`
	TargetMs float64  `json:"target_ms"`
	Design   *int     `json:"design,omitempty"`
	NDCG     float64  `json:"ndcg,omitempty"`
	P99Ms    *float64 `json:"p99_ms,omitempty"`
}

// Fastest is the fastest design at one QPS whose NDCG is at least
// MinNDCG: the lowest modeled p99; Design nil when none reaches it.
type Fastest struct {
	QPS     float64  `json:"qps"`
	MinNDCG float64  `json:"min_ndcg"`
	Design  *int     `json:"design,omitempty"`
	NDCG    float64  `json:"ndcg,omitempty"`
	P99Ms   *float64 `json:"p99_ms,omitempty"`
}

// Validate checks the options that need no graph.
func (o Options) Validate() error {
	var errs []error
	if len(o.Graphs) == 0 {
		errs = append(errs, errors.New("no graph to search"))
	}
	for g := range o.GraphSweep {
		if !slices.Contains(o.Graphs, g) {
			errs = append(errs, fmt.Errorf("a sweep of %s, which is not a searched graph", g))
		}
	}
	if len(o.QPS) == 0 {
		errs = append(errs, errors.New("no QPS: give at least one rate"))
	}
	seen := map[float64]bool{}
	for _, q := range o.QPS {
		if !(q > 0) || math.IsInf(q, 0) {
			errs = append(errs, fmt.Errorf("QPS %g: must be a finite rate > 0", q))
		} else if seen[q] {
			errs = append(errs, fmt.Errorf("QPS %g given twice", q))
		}
		seen[q] = true
	}
	for _, t := range o.TargetsMs {
		if !(t > 0) || math.IsInf(t, 0) {
			errs = append(errs, fmt.Errorf("latency target %g ms: must be finite and > 0", t))
		}
	}
	for _, q := range o.QualityTargets {
		if !(q >= 0) || math.IsInf(q, 0) {
			errs = append(errs, fmt.Errorf("quality target %g: must be a finite NDCG ≥ 0", q))
		}
	}
	if !(o.SLAMs >= 0) || math.IsInf(o.SLAMs, 0) {
		errs = append(errs, fmt.Errorf("SLA %g ms: must be finite and ≥ 0", o.SLAMs))
	}
	return errors.Join(errs...)
}

// ServingSets are the overrides that make every design's run replay its
// queries at every rate: the first rate is serving.qps, the others
// serving.sweep_qps (one arrival stream, scaled), and the SLA.
func (o Options) ServingSets() []string {
	sets := []string{"serving.qps=" + formatQPS(o.QPS[0])}
	if len(o.QPS) > 1 {
		rest := make([]string, len(o.QPS)-1)
		for i, q := range o.QPS[1:] {
			rest[i] = formatQPS(q)
		}
		sets = append(sets, "serving.sweep_qps=["+strings.Join(rest, ",")+"]")
	}
	if o.SLAMs > 0 {
		sets = append(sets, "serving.sla_ms="+strconv.FormatFloat(o.SLAMs, 'g', -1, 64))
	}
	return sets
}

func formatQPS(q float64) string { return strconv.FormatFloat(q, 'g', -1, 64) }

// targets are the latency targets the best design is chosen for.
func (o Options) targets() []float64 {
	if len(o.TargetsMs) > 0 {
		return o.TargetsMs
	}
	if o.SLAMs > 0 {
		return []float64{o.SLAMs}
	}
	return nil
}

// Search runs every design once through bench.Compare (the serving
// overrides after the caller's, so that the search's rates win) and
// sets out each design's quality and p99 at every QPS, the frontier at
// each QPS and the best design per target.
func Search(ctx context.Context, r bench.Runner, o Options) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	res := &Result{Kind: Kind, Graphs: o.Graphs, Sets: o.Sets, Sweep: o.Sweep, GraphSweep: o.GraphSweep, QPS: o.QPS, SLAMs: o.SLAMs,
		TargetsMs: o.targets(), QualityTargets: o.QualityTargets, Clock: serving.Modeled, Started: time.Now()}
	runs, err := o.runAll(ctx, r)
	if err != nil {
		return nil, err
	}
	for i, run := range runs {
		res.Designs = append(res.Designs, design(i, run, o.QPS))
	}
	res.rank()
	res.Note = depthNote(res.Designs)
	res.WallMs = float64(time.Since(res.Started).Microseconds()) / 1e3
	return res, nil
}

// runAll runs every design through bench.Compare: once over every graph
// without per-graph sweeps, else once per graph with its own sweep, each
// graph checked at its first point before anything runs.
func (o Options) runAll(ctx context.Context, r bench.Runner) ([]bench.Run, error) {
	sets := append(append([]string(nil), o.Sets...), o.ServingSets()...)
	if len(o.GraphSweep) == 0 {
		comp, err := bench.Compare(ctx, r, bench.Options{Graphs: o.Graphs, Sets: sets, Sweep: o.Sweep, Log: o.Log})
		if err != nil {
			return nil, err
		}
		return comp.Runs, nil
	}
	sweeps := make([][]bench.Sweep, len(o.Graphs))
	for i, g := range o.Graphs {
		sweeps[i] = append(append([]bench.Sweep(nil), o.Sweep...), o.GraphSweep[g]...)
		// A graph invalid without a sweep is the caller's error, as in
		// bench; one invalid at a point gets its row when it comes.
		if _, err := r.Check(g, sets); err != nil && len(sweeps[i]) == 0 {
			return nil, err
		}
	}
	var runs []bench.Run
	for i, g := range o.Graphs {
		comp, err := bench.Compare(ctx, r, bench.Options{Graphs: []string{g}, Sets: sets, Sweep: sweeps[i], Log: o.Log})
		if err != nil {
			return nil, err
		}
		runs = append(runs, comp.Runs...)
	}
	return runs, nil
}

// design takes one run's figures.
func design(id int, run bench.Run, qps []float64) Design {
	d := Design{ID: id, Name: strings.TrimSpace(run.Graph + " " + strings.Join(run.Point, " ")), Graph: run.Graph,
		File: run.File, Point: run.Point, Error: run.Error}
	if d.Error != "" || run.Results == nil {
		return d
	}
	r := run.Results
	d.Batches, d.Digest, d.ModeledMsPerQuery = r.Batches, r.Digest, r.IterationMs.Modeled
	if r.Metrics.NDCG != nil {
		v := *r.Metrics.NDCG
		d.NDCG, d.NDCGK, d.NDCGQueries = &v, int(r.Metrics.Extra["ndcg_k"]), int(r.Metrics.Extra["ndcg_queries"])
	}
	reports := servingReports(r)
	if len(reports) == 0 {
		d.Error = "no modeled serving report: no stage of the graph charged a device, so there is nothing to replay"
		return d
	}
	for _, q := range qps {
		rep := find(reports, q)
		if rep == nil {
			d.Error = fmt.Sprintf("no modeled serving report at %g QPS", q)
			d.Serving = nil
			return d
		}
		d.Serving = append(d.Serving, latency(rep))
	}
	return d
}

// servingReports are a run's modeled replays: serving.qps, then each
// rate of serving.sweep_qps.
func servingReports(r *results.Results) []*serving.Report {
	if r.Serving == nil || r.Serving.Modeled == nil {
		return nil
	}
	return append([]*serving.Report{r.Serving.Modeled}, r.Serving.ModeledSweep...)
}

// find is the first report offered at qps.
func find(reports []*serving.Report, qps float64) *serving.Report {
	for _, rep := range reports {
		if rep != nil && rep.OfferedQPS == qps {
			return rep
		}
	}
	return nil
}

// latency is a report's figures.
func latency(rep *serving.Report) Latency {
	l := Latency{QPS: rep.OfferedQPS, WithinSLA: rep.WithinSLA, Bottleneck: rep.Bottleneck,
		Utilisation: rep.Utilisation[rep.Bottleneck], CapacityQPS: rep.CapacityQPS}
	if rep.Overload != nil {
		l.Overload = rep.Overload.Reason
		return l
	}
	if p := rep.LatencyMs; p != nil {
		p50, p99, mean := p.P50, p.P99, p.Mean
		l.P50Ms, l.P99Ms, l.MeanMs = &p50, &p99, &mean
	}
	return l
}

// point is design d at the i-th QPS as the frontier sees it.
func (d *Design) point(i int) Point {
	if d.Error != "" || d.NDCG == nil || i >= len(d.Serving) {
		return Point{}
	}
	l := d.Serving[i]
	if l.Overload != "" || l.P99Ms == nil {
		return Point{}
	}
	return Point{Quality: *d.NDCG, P99Ms: *l.P99Ms, Eligible: true}
}

// rank finds the frontier and the best design per target at each QPS.
func (r *Result) rank() {
	r.Frontiers, r.Best, r.Fastest = nil, nil, nil
	for qi, q := range r.QPS {
		pts := make([]Point, len(r.Designs))
		for i := range r.Designs {
			pts[i] = r.Designs[i].point(qi)
		}
		f := Frontier{QPS: q, Designs: ParetoFrontier(pts)}
		if f.Designs == nil {
			f.Designs = []int{}
		}
		for _, i := range f.Designs {
			r.Designs[i].Serving[qi].Frontier = true
		}
		r.Frontiers = append(r.Frontiers, f)
		for _, t := range r.TargetsMs {
			b := Best{QPS: q, TargetMs: t}
			if i := BestWithin(pts, t); i >= 0 {
				id, p99 := i, pts[i].P99Ms
				b.Design, b.NDCG, b.P99Ms = &id, pts[i].Quality, &p99
			}
			r.Best = append(r.Best, b)
		}
		for _, mq := range r.QualityTargets {
			f := Fastest{QPS: q, MinNDCG: mq}
			if i := FastestWithQuality(pts, mq); i >= 0 {
				id, p99 := i, pts[i].P99Ms
				f.Design, f.NDCG, f.P99Ms = &id, pts[i].Quality, &p99
			}
			r.Fastest = append(r.Fastest, f)
		}
	}
}

// Failed counts the designs without figures.
func (r *Result) Failed() int {
	n := 0
	for _, d := range r.Designs {
		if d.Error != "" {
			n++
		}
	}
	return n
}

// depthNote is a warning when the designs measure NDCG at different
// depths: NDCG@8 and NDCG@32 are different measures, and a frontier over
// both compares them as one.
func depthNote(designs []Design) string {
	var depths []int
	for _, d := range designs {
		if d.NDCG != nil && !slices.Contains(depths, d.NDCGK) {
			depths = append(depths, d.NDCGK)
		}
	}
	if len(depths) < 2 {
		return ""
	}
	slices.Sort(depths)
	s := make([]string, len(depths))
	for i, k := range depths {
		s[i] = strconv.Itoa(k)
	}
	return "the designs measure NDCG at different depths (" + strings.Join(s, ", ") +
		"): set the serving filter's ndcg_k to one depth to compare like with like"
}
