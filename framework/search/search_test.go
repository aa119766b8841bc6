package search

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/bench"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/serving"
)

// fakeDesign is what a fake run reports: its NDCG and its p99 at each
// QPS (0: overloaded there).
type fakeDesign struct {
	ndcg float64
	p99  map[float64]float64
}

// fakeRunner hands out fake designs by file and records the overrides
// each check got.
type fakeRunner struct {
	designs map[string]fakeDesign
	sets    [][]string
}

func (f *fakeRunner) Check(path string, sets []string) (bench.Graph, error) {
	f.sets = append(f.sets, sets)
	d, ok := f.designs[path]
	if !ok {
		return nil, errors.New("no such graph")
	}
	return fakeGraph{name: path, d: d, sets: sets}, nil
}

type fakeGraph struct {
	name string
	d    fakeDesign
	sets []string
}

func (g fakeGraph) Name() string { return g.name }

// Run reports the design's figures at the rates the overrides ask for,
// in the order the engine would: serving.qps, then serving.sweep_qps.
func (g fakeGraph) Run(context.Context, bool) (*results.Results, *bench.Modeled, error) {
	ndcg := g.d.ndcg
	res := &results.Results{Graph: g.name, Batches: 4, Digest: "d", Metrics: results.Metrics{NDCG: &ndcg,
		Extra: map[string]float64{"ndcg_k": 64, "ndcg_queries": 4}}}
	var reps []*serving.Report
	for _, q := range ratesOf(g.sets) {
		rep := &serving.Report{Clock: serving.Modeled, OfferedQPS: q, Bottleneck: "host", Utilisation: map[string]float64{"host": 0.5}}
		if p := g.d.p99[q]; p > 0 {
			rep.LatencyMs = &serving.Percentiles{P50: p / 2, P99: p}
		} else {
			rep.Utilisation["host"] = 1.2
			rep.Overload = &serving.Overload{Reason: "host is at 120%"}
		}
		reps = append(reps, rep)
	}
	res.Serving = &results.Serving{Modeled: reps[0], ModeledSweep: reps[1:]}
	return res, nil, nil
}

// ratesOf reads the rates back from the search's overrides.
func ratesOf(sets []string) []float64 {
	var out []float64
	for _, s := range sets {
		if v, ok := strings.CutPrefix(s, "serving.qps="); ok {
			out = append([]float64{parse(v)}, out...)
		}
		if v, ok := strings.CutPrefix(s, "serving.sweep_qps="); ok {
			for _, x := range strings.Split(strings.Trim(v, "[]"), ",") {
				out = append(out, parse(x))
			}
		}
	}
	return out
}

func parse(s string) float64 {
	var f float64
	for _, c := range s {
		f = 10*f + float64(c-'0')
	}
	return f
}

// A search takes each design's quality and p99 at each QPS from its one
// run; a design overloaded at a QPS is reported overloaded there, with no
// p99, and is never on that QPS's frontier nor the best for a target,
// however good its quality.
func TestSearchOverloadNeverOnFrontier(t *testing.T) {
	r := &fakeRunner{designs: map[string]fakeDesign{
		"light.yaml": {ndcg: 0.80, p99: map[float64]float64{100: 2, 500: 3}},
		"heavy.yaml": {ndcg: 0.90, p99: map[float64]float64{100: 8}}, // overloaded at 500
		"mid.yaml":   {ndcg: 0.85, p99: map[float64]float64{100: 9, 500: 12}},
	}}
	o := Options{Graphs: []string{"light.yaml", "heavy.yaml", "mid.yaml"}, QPS: []float64{100, 500}, SLAMs: 10, TargetsMs: []float64{5, 10, 20},
		QualityTargets: []float64{0.82, 0.88}}
	res, err := Search(context.Background(), r, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, sets := range r.sets {
		if !slices.Equal(sets, []string{"serving.qps=100", "serving.sweep_qps=[500]", "serving.sla_ms=10"}) {
			t.Fatalf("overrides %q", sets)
		}
	}
	heavy := res.Designs[1]
	if heavy.Serving[0].P99Ms == nil || *heavy.Serving[0].P99Ms != 8 || heavy.Serving[1].Overload == "" || heavy.Serving[1].P99Ms != nil {
		t.Fatalf("heavy: %+v", heavy.Serving)
	}
	if heavy.Serving[1].Frontier {
		t.Error("an overloaded design is marked on the frontier")
	}
	if got := res.Frontiers[0].Designs; !slices.Equal(got, []int{0, 1}) {
		t.Errorf("frontier at 100 QPS %v, want [0 1] (mid is dominated by heavy)", got)
	}
	if got := res.Frontiers[1].Designs; !slices.Equal(got, []int{0, 2}) {
		t.Errorf("frontier at 500 QPS %v, want [0 2] (heavy overloaded)", got)
	}
	best := map[[2]float64]int{}
	for _, b := range res.Best {
		id := -1
		if b.Design != nil {
			id = *b.Design
		}
		best[[2]float64{b.QPS, b.TargetMs}] = id
	}
	want := map[[2]float64]int{{100, 5}: 0, {100, 10}: 1, {100, 20}: 1, {500, 5}: 0, {500, 10}: 0, {500, 20}: 2}
	for k, v := range want {
		if best[k] != v {
			t.Errorf("best at %g QPS within %g ms: %d, want %d", k[0], k[1], best[k], v)
		}
	}
	fastest := map[[2]float64]int{}
	for _, f := range res.Fastest {
		id := -1
		if f.Design != nil {
			id = *f.Design
		}
		fastest[[2]float64{f.QPS, f.MinNDCG}] = id
	}
	// At 500 QPS heavy (0.90) is overloaded: nothing reaches 0.88.
	wantFast := map[[2]float64]int{{100, 0.82}: 1, {100, 0.88}: 1, {500, 0.82}: 2, {500, 0.88}: -1}
	for k, v := range wantFast {
		if got, ok := fastest[k]; !ok || got != v {
			t.Errorf("fastest at %g QPS with NDCG ≥ %g: %d, want %d", k[0], k[1], got, v)
		}
	}
	var out bytes.Buffer
	WriteTable(&out, res)
	for _, s := range []string{"overload (host at 120%)", "8.000 *", "@500 QPS: 0 (NDCG 0.8000, p99 3.000 ms) → 2 (NDCG 0.8500, p99 12.000 ms)", "modeled"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("table without %q:\n%s", s, out.String())
		}
	}
}

// Options are refused before anything runs when they cannot search.
func TestSearchOptions(t *testing.T) {
	for _, o := range []Options{
		{QPS: []float64{1}},
		{Graphs: []string{"g"}},
		{Graphs: []string{"g"}, QPS: []float64{0}},
		{Graphs: []string{"g"}, QPS: []float64{5, 5}},
		{Graphs: []string{"g"}, QPS: []float64{5}, TargetsMs: []float64{-1}},
	} {
		r := &fakeRunner{}
		if _, err := Search(context.Background(), r, o); err == nil || len(r.sets) > 0 {
			t.Errorf("%+v: err %v after %d checks", o, err, len(r.sets))
		}
	}
	if got := (Options{QPS: []float64{7}}).ServingSets(); !slices.Equal(got, []string{"serving.qps=7"}) {
		t.Errorf("one rate: %q", got)
	}
}

// A key swept in one graph only is swept there, after the common keys;
// the other graphs run once per common point.
func TestSearchGraphSweep(t *testing.T) {
	r := &fakeRunner{designs: map[string]fakeDesign{
		"one.yaml": {ndcg: 0.8, p99: map[float64]float64{100: 2}},
		"two.yaml": {ndcg: 0.9, p99: map[float64]float64{100: 3}},
	}}
	o := Options{Graphs: []string{"one.yaml", "two.yaml"}, QPS: []float64{100},
		GraphSweep: map[string][]bench.Sweep{"two.yaml": {{Key: "stages.keep.k", Values: []string{"64", "256"}}}}}
	res, err := Search(context.Background(), r, o)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range res.Designs {
		names = append(names, d.Name)
	}
	if want := []string{"one.yaml", "two.yaml stages.keep.k=64", "two.yaml stages.keep.k=256"}; !slices.Equal(names, want) {
		t.Errorf("designs %q, want %q", names, want)
	}
	o.GraphSweep = map[string][]bench.Sweep{"three.yaml": {{Key: "k", Values: []string{"1"}}}}
	if _, err := Search(context.Background(), &fakeRunner{}, o); err == nil {
		t.Error("a sweep of a graph not searched was accepted")
	}
}
