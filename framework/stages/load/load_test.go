package load_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/data"
	"github.com/flowrun/flowrun/framework/data/datatest"
	"github.com/flowrun/flowrun/framework/engine"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/serving"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/stages/exchange"
	"github.com/flowrun/flowrun/framework/stages/filter"
	"github.com/flowrun/flowrun/framework/stages/internal/stagetest"
	"github.com/flowrun/flowrun/framework/stages/load"
	"github.com/flowrun/flowrun/framework/stages/plan"
	"github.com/flowrun/flowrun/framework/stages/score"
	"github.com/flowrun/flowrun/framework/stages/train"
)

// runGraph runs a graph file in process with the stage kinds the graphs
// of these tests use.
func runGraph(t *testing.T, path string, sets ...string) (*results.Results, error) {
	t.Helper()
	kinds, err := stage.NewRegistry(load.NewFactory(), plan.NewFactory(), exchange.NewFactory(), train.NewFactory())
	if err != nil {
		t.Fatal(err)
	}
	return stagetest.RunGraph(t, kinds, path, engine.HazardsOff, sets...)
}

// The shipped demo graph trains on a file that flowrun gen wrote from it
// exactly as on its own synthetic batches: the same model digest.
func TestGenFileTrainsTheSameModelAsSynthetic(t *testing.T) {
	demo := "../../../graphs/demo.yaml"
	sets := []string{"dataset.batches=12", "dataset.eval_batches=2", "dataset.locality=high", "seed=5"}
	cfg, _, err := config.Load(demo, sets)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "demo.frb")
	if _, err := data.WriteSynthetic(path, cfg.Seed, cfg.Dataset, nil); err != nil {
		t.Fatal(err)
	}
	syn, err := runGraph(t, demo, sets...)
	if err != nil {
		t.Fatal(err)
	}
	file, err := runGraph(t, demo, append(sets, "dataset.kind=file", "dataset.path="+path)...)
	if err != nil {
		t.Fatal(err)
	}
	if syn.Digest != file.Digest {
		t.Errorf("digest from the file %s, from the generator %s", file.Digest, syn.Digest)
	}
	if syn.Metrics.AUC == nil || file.Metrics.AUC == nil || *syn.Metrics.AUC != *file.Metrics.AUC {
		t.Errorf("held-out AUC from the file %v, from the generator %v", file.Metrics.AUC, syn.Metrics.AUC)
	}
}

// fileGraph is a training graph over a batch file: load → train. The
// learning rates suit the fixtures: a small step for the dense weights
// (Criteo's log-scaled counts are large and all positive, so a larger one
// oscillates), a large one for the rows, whose gradient is of the batch's
// mean loss.
func fileGraph(t *testing.T, path string, h *data.Header, batchSize, batches, evalBatches int) string {
	t.Helper()
	g := fmt.Sprintf(`name: %s
seed: 3
dataset:
  kind: file
  path: %s
  batches: %d
  batch_size: %d
  tables: %d
  rows: %d
  dim: 4
  lookups: %d
  dense_features: %d
  eval_batches: %d
model:
  plugin: builtin:logreg
  options:
    learning_rate: 0.05
stages:
  load:
    kind: load
    out: [batches]
  train:
    kind: train
    in: batches
    learning_rate: 4
`, h.Source, path, batches, batchSize, h.Tables, h.MaxRows(), h.Lookups, h.Dense, evalBatches)
	file := filepath.Join(t.TempDir(), h.Source+".yaml")
	if err := os.WriteFile(file, []byte(g), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// learned checks that the loss fell from the first tenth of the batches
// to the last, and that held-out AUC beats chance.
func learned(t *testing.T, res *results.Results) {
	t.Helper()
	m := res.Metrics
	if m.Loss == nil || m.AUC == nil {
		t.Fatalf("no loss curve or AUC in %+v", m)
	}
	t.Logf("loss %.4f → %.4f (tenth means), held-out AUC %.3f over %d samples",
		m.Loss.FirstTenthMean, m.Loss.LastTenthMean, *m.AUC, m.EvalCount)
	if !(m.Loss.LastTenthMean < m.Loss.FirstTenthMean-0.02) {
		t.Errorf("loss did not fall: %.4f → %.4f", m.Loss.FirstTenthMean, m.Loss.LastTenthMean)
	}
	if !(*m.AUC > 0.6) {
		t.Errorf("held-out AUC %.3f", *m.AUC)
	}
}

// A Criteo Kaggle TSV fixture, made here, converts and trains: the loss
// falls and held-out AUC beats chance.
func TestCriteoFixtureConvertsAndTrains(t *testing.T) {
	var tsv bytes.Buffer
	if err := datatest.CriteoTSV(&tsv, 3000, 11); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "criteo.frb")
	h, err := data.ConvertCriteo(&tsv, "train.txt", out, data.ConvertOptions{Rows: 5000})
	if err != nil {
		t.Fatal(err)
	}
	// 3000 samples: 8 held-out batches of 32 at the end, 85 training
	// batches before them, gone around 3.5 times.
	res, err := runGraph(t, fileGraph(t, out, h, 32, 300, 8))
	if err != nil {
		t.Fatal(err)
	}
	learned(t, res)
}

// A MovieLens ratings fixture, made here, converts and trains.
func TestMovieLensFixtureConvertsAndTrains(t *testing.T) {
	var csv bytes.Buffer
	if err := datatest.MovieLensCSV(&csv, 60, 80, 11); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "ml.frb")
	h, err := data.ConvertMovieLens(&csv, "ratings.csv", out, data.ConvertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runGraph(t, fileGraph(t, out, h, 32, 300, 8))
	if err != nil {
		t.Fatal(err)
	}
	learned(t, res)
}

// A file of another shape than the graph's dataset fails the run before
// any batch, naming the keys to change.
func TestFileOfAnotherShapeFailsTheRun(t *testing.T) {
	var tsv bytes.Buffer
	datatest.CriteoTSV(&tsv, 200, 1)
	out := filepath.Join(t.TempDir(), "criteo.frb")
	h, err := data.ConvertCriteo(&tsv, "train.txt", out, data.ConvertOptions{Rows: 100})
	if err != nil {
		t.Fatal(err)
	}
	_, err = runGraph(t, fileGraph(t, out, h, 64, 2, 1), "dataset.tables=8", "dataset.dense_features=3")
	if err == nil || !strings.Contains(err.Error(), "dataset::tables: the file "+out+" has 26 tables, the graph 8") ||
		!strings.Contains(err.Error(), "dataset::dense_features") {
		t.Fatalf("err = %v", err)
	}
	_, err = runGraph(t, fileGraph(t, filepath.Join(t.TempDir(), "missing.frb"), h, 64, 2, 1))
	if err == nil || !strings.Contains(err.Error(), "missing.frb") {
		t.Fatalf("missing file: %v", err)
	}
}

// runServing runs graphs/demo-serving.yaml (load → score → filter) in
// process with sets.
func runServing(t *testing.T, graph string, sets ...string) (*results.Results, error) {
	t.Helper()
	kinds, err := stage.NewRegistry(load.NewFactory(), score.NewFactory(), filter.NewFactory())
	if err != nil {
		t.Fatal(err)
	}
	return stagetest.RunGraph(t, kinds, "../../../graphs/"+graph+".yaml", engine.HazardsOff, sets...)
}

// Pacing batches at Poisson arrival times changes when they go, not what
// they compute: demo-serving ends with demo-inference's digest and NDCG
// over the same batches, and reports both clocks, each labelled; the
// unpaced graph reports no serving at all.
func TestPacedServingKeepsTheDigest(t *testing.T) {
	const batches = 40
	plain, err := runServing(t, "demo-inference", fmt.Sprintf("dataset.batches=%d", batches))
	if err != nil {
		t.Fatal(err)
	}
	paced, err := runServing(t, "demo-serving", fmt.Sprintf("dataset.batches=%d", batches),
		"stages.load.qps=400", "stages.load.warmup=5", "serving.queries=5000")
	if err != nil {
		t.Fatal(err)
	}
	if plain.Digest != paced.Digest || *plain.Metrics.NDCG != *paced.Metrics.NDCG {
		t.Errorf("paced: digest %s NDCG %v; unpaced: %s %v", paced.Digest, *paced.Metrics.NDCG, plain.Digest, *plain.Metrics.NDCG)
	}
	if plain.Serving != nil {
		t.Errorf("demo-inference serves no load, yet reports %+v", plain.Serving)
	}
	s := paced.Serving
	if s == nil || s.Modeled == nil || s.Measured == nil {
		t.Fatalf("serving = %+v", s)
	}
	m := s.Measured
	if m.Clock != serving.Measured || m.Queries != batches-5 || m.OfferedQPS != 400 || m.Seed != 1 || m.SLAMs != 10 {
		t.Errorf("measured report %+v", m)
	}
	if m.Overload == nil && (m.LatencyMs == nil || m.LatencyMs.P99 <= 0 || m.WithinSLA == nil) {
		t.Errorf("measured report without its figures: %+v", m)
	}
	mod := s.Modeled
	if mod.Clock != serving.Modeled || mod.Queries != 5000 || mod.DemandBatches != batches || mod.Servers["gpu"] != 1 || mod.Servers["host"] != 1 {
		t.Errorf("modeled report %+v", mod)
	}
}

// The modeled replay takes its demands from the run: at a vanishing load
// no query waits, and its mean latency is the sum of the stages' mean
// modeled times (5,000 queries over 40 batches: each batch 125 times).
func TestModeledServingDemandsAreTheRunsStageTimes(t *testing.T) {
	res, err := runServing(t, "demo-serving", "dataset.batches=40", "stages.load.arrival=none",
		"stages.load.qps=null", "stages.load.warmup=null", "stages.load.sla_ms=null", "serving.queries=5000", "serving.qps=0.001")
	if err != nil {
		t.Fatal(err)
	}
	if res.Serving == nil || res.Serving.Measured != nil || res.Serving.Modeled == nil {
		t.Fatalf("serving = %+v", res.Serving)
	}
	want := 0.0
	for _, s := range res.Stages {
		if s.ModeledMs != nil {
			want += s.ModeledMs.Mean
		}
	}
	got := res.Serving.Modeled.LatencyMs.Mean
	if want <= 0 || math.Abs(got-want) > 1e-9*want {
		t.Errorf("modeled mean latency %.9f ms at 0.001 QPS, the stages' modeled means sum to %.9f ms", got, want)
	}
}

// serving.warmup leaves the run's first batches out of the replay: the
// demands cycle over the rest, and a warm-up as long as the run is
// refused (when the graph loads) rather than replaying nothing.
func TestModeledServingWarmup(t *testing.T) {
	sets := []string{"dataset.batches=40", "stages.load.arrival=none", "stages.load.qps=null", "stages.load.warmup=null",
		"stages.load.sla_ms=null", "serving.queries=2000"}
	res, err := runServing(t, "demo-serving", append(sets, "serving.warmup=10")...)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Serving.Modeled.DemandBatches; got != 30 {
		t.Errorf("demand batches %d with 10 of 40 left out, want 30", got)
	}
	if _, err := runServing(t, "demo-serving", append(sets, "serving.warmup=40")...); err == nil || !strings.Contains(err.Error(), "serving::warmup: 40 leaves none") {
		t.Errorf("warmup of every batch: err %v, want a serving.warmup error", err)
	}
}

// serving.queue_on puts a device on another's servers: the demo's gpu
// queued on the host leaves one resource, busy for what both were.
func TestModeledServingQueueOn(t *testing.T) {
	sets := []string{"dataset.batches=40", "stages.load.arrival=none", "stages.load.qps=null", "stages.load.warmup=null",
		"stages.load.sla_ms=null", "serving.queries=2000", "serving.qps=1000"}
	apart, err := runServing(t, "demo-serving", sets...)
	if err != nil {
		t.Fatal(err)
	}
	shared, err := runServing(t, "demo-serving", append(sets, "serving.queue_on.gpu=host")...)
	if err != nil {
		t.Fatal(err)
	}
	a, s := apart.Serving.Modeled.Utilisation, shared.Serving.Modeled.Utilisation
	if _, ok := s["gpu"]; ok || len(s) != 1 {
		t.Fatalf("utilisation with gpu queued on host: %v, want the host alone", s)
	}
	if want := a["host"] + a["gpu"]; math.Abs(s["host"]-want) > 1e-9*want {
		t.Errorf("host utilisation %v, want host + gpu apart = %v", s["host"], want)
	}
}

// An offered load far above what this machine serves is reported as
// overload, with no percentiles, and the run ends.
func TestPacedOverloadIsReportedNotAHang(t *testing.T) {
	res, err := runServing(t, "demo-serving", "dataset.batches=60", "stages.load.qps=1000000", "serving.qps=1000000", "serving.queries=2000")
	if err != nil {
		t.Fatal(err)
	}
	for _, rep := range []*serving.Report{res.Serving.Measured, res.Serving.Modeled} {
		if rep.Overload == nil || rep.LatencyMs != nil || rep.WithinSLA != nil || !(rep.AchievedQPS < rep.ArrivalQPS) {
			t.Errorf("%s at 10^6 QPS: %+v", rep.Clock, rep)
		}
	}
}

// Bad arrival options are refused at their keys, with the graph's line.
func TestArrivalOptionsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		sets []string
		want string
	}{
		{[]string{"stages.load.arrival=uniform"}, `stages::load::arrival: unknown arrival "uniform" (allowed: none, poisson)`},
		{[]string{"stages.load.qps=-1"}, "stages::load::qps: must be a finite number of queries per second > 0 with arrival: poisson, got -1"},
		{[]string{"stages.load.arrival=none"}, "stages::load::qps: is read only with arrival: poisson"},
		{[]string{"stages.load.warmup=-2"}, "stages::load::warmup: must be ≥ 0 batches, got -2"},
	} {
		_, err := runServing(t, "demo-serving", tc.sets...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "demo-serving.yaml:") {
			t.Errorf("%v: err %v, want %q at a line of the graph", tc.sets, err, tc.want)
		}
	}
}

// serving.sweep_qps replays the same queries at each rate: the rate of
// serving.qps again gives the same report, p99 never falls as the rate
// rises, and a rate past the bottleneck's capacity is overload.
func TestModeledSweep(t *testing.T) {
	res, err := runServing(t, "demo-serving", "dataset.batches=40", "stages.load.arrival=none",
		"stages.load.qps=null", "stages.load.warmup=null", "stages.load.sla_ms=null",
		"serving.queries=5000", "serving.sweep_qps=[2000, 8000, 10000, 1000000]")
	if err != nil {
		t.Fatal(err)
	}
	sweep := res.Serving.ModeledSweep
	if len(sweep) != 4 {
		t.Fatalf("sweep of %d reports", len(sweep))
	}
	if a, b := sweep[1], res.Serving.Modeled; a.LatencyMs == nil || b.LatencyMs == nil || *a.LatencyMs != *b.LatencyMs {
		t.Errorf("8000 QPS in the sweep %+v, as serving.qps %+v", a.LatencyMs, b.LatencyMs)
	}
	for i := 1; i < 3; i++ {
		if sweep[i].LatencyMs.P99 < sweep[i-1].LatencyMs.P99 {
			t.Errorf("p99 %.4f ms at %g QPS, %.4f ms at %g", sweep[i].LatencyMs.P99, sweep[i].OfferedQPS, sweep[i-1].LatencyMs.P99, sweep[i-1].OfferedQPS)
		}
	}
	if sweep[3].Overload == nil || sweep[3].LatencyMs != nil {
		t.Errorf("10^6 QPS: %+v", sweep[3])
	}
}
