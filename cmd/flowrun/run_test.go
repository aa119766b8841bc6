package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/engine"
	"github.com/flowrun/flowrun/framework/results"
)

// TestRunDemoResults runs `flowrun run graphs/demo.yaml --out r.json` and
// reads the file back as JSON: its keys are the documented ones, every stage
// saw every batch, and the model learned.
func TestRunDemoResults(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "r.json")
	r := mustFlowrun(t, "run", demo, "--out", out)
	for _, want := range []string{"digest", "held-out", "results      " + out} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("summary has no %q:\n%s", want, r.stdout)
		}
	}

	cfg, _, err := config.Load(demo, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// The file's shape, by key, as tools other than this package read it.
	var doc struct {
		Graph   *string `json:"graph"`
		Seed    *uint64 `json:"seed"`
		Batches *int    `json:"batches"`
		Stages  []struct {
			Name    *string `json:"name"`
			Kind    *string `json:"kind"`
			Batches *int    `json:"batches"`
			WallMs  *struct {
				P50, P95, P99 *float64
			} `json:"wall_ms"`
		} `json:"stages"`
		Digest  *string `json:"digest"`
		Metrics *struct {
			Loss *struct {
				FirstTenthMean *float64 `json:"first_tenth_mean"`
				LastTenthMean  *float64 `json:"last_tenth_mean"`
			} `json:"loss"`
			AUC *float64 `json:"auc"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	switch {
	case doc.Graph == nil || *doc.Graph != cfg.Name:
		t.Errorf("graph: %v, want %s", doc.Graph, cfg.Name)
	case doc.Seed == nil || *doc.Seed != cfg.Seed:
		t.Errorf("seed: %v, want %d", doc.Seed, cfg.Seed)
	case doc.Batches == nil || *doc.Batches != cfg.Dataset.Batches:
		t.Errorf("batches: %v, want %d", doc.Batches, cfg.Dataset.Batches)
	case doc.Digest == nil || !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(*doc.Digest):
		t.Errorf("digest: %v, want 64 hex digits", doc.Digest)
	case doc.Metrics == nil || doc.Metrics.Loss == nil || doc.Metrics.Loss.FirstTenthMean == nil || doc.Metrics.Loss.LastTenthMean == nil:
		t.Errorf("metrics.loss missing first_tenth_mean / last_tenth_mean:\n%s", data)
	case doc.Metrics.AUC == nil:
		t.Errorf("metrics.auc missing:\n%s", data)
	}
	if t.Failed() {
		return
	}
	if first, last := *doc.Metrics.Loss.FirstTenthMean, *doc.Metrics.Loss.LastTenthMean; !(last < first) {
		t.Errorf("loss did not fall: first tenth %.4f, last tenth %.4f", first, last)
	}
	if auc := *doc.Metrics.AUC; !(auc > 0.6) {
		t.Errorf("held-out AUC %.4f, want > 0.6", auc)
	}

	// Every training and held-out batch passes every stage of the demo.
	wantStages := map[string]string{}
	for name, st := range cfg.Stages {
		wantStages[name] = st.Kind
	}
	total := cfg.Dataset.Batches + cfg.Dataset.EvalBatches
	if len(doc.Stages) != len(wantStages) {
		t.Errorf("%d stages, want %d", len(doc.Stages), len(wantStages))
	}
	for _, s := range doc.Stages {
		if s.Name == nil || s.Kind == nil || s.Batches == nil || s.WallMs == nil ||
			s.WallMs.P50 == nil || s.WallMs.P95 == nil || s.WallMs.P99 == nil {
			t.Errorf("stage without name, kind, batches or wall_ms p50/p95/p99:\n%s", data)
			continue
		}
		if wantStages[*s.Name] != *s.Kind {
			t.Errorf("stage %s of kind %s, not in the demo", *s.Name, *s.Kind)
		}
		if *s.Batches != total {
			t.Errorf("stage %s: %d batches, want %d training + %d held-out", *s.Name, *s.Batches, cfg.Dataset.Batches, cfg.Dataset.EvalBatches)
		}
		if p50, p95, p99 := *s.WallMs.P50, *s.WallMs.P95, *s.WallMs.P99; !(0 <= p50 && p50 <= p95 && p95 <= p99) {
			t.Errorf("stage %s: wall_ms p50 %g, p95 %g, p99 %g out of order", *s.Name, p50, p95, p99)
		}
	}
}

// demoDigest is the digest of graphs/demo.yaml as shipped, run once.
var demoDigest = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "flowrun-demo-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "r.json")
	root := newRootCmd()
	root.SetArgs([]string{"run", demo, "-q", "--out", out})
	root.SetOut(new(strings.Builder))
	root.SetErr(new(strings.Builder))
	if err := root.Execute(); err != nil {
		return "", err
	}
	res, err := results.Read(out)
	if err != nil {
		return "", err
	}
	return res.Digest, nil
})

func wantDemoDigest(t *testing.T) string {
	t.Helper()
	d, err := demoDigest()
	if err != nil {
		t.Fatalf("run demo: %v", err)
	}
	return d
}

// TestRunDigest checks that the model digest is a function of the graph and
// its seed alone: not of the run, the process layout or the cache policy.
func TestRunDigest(t *testing.T) {
	t.Parallel()
	base := wantDemoDigest(t)
	t.Run("SameSeed", func(t *testing.T) {
		t.Parallel()
		if d := runResults(t, demo).Digest; d != base {
			t.Errorf("second run: digest %s, first %s", d, base)
		}
	})
	t.Run("OtherSeed", func(t *testing.T) {
		t.Parallel()
		res := runResults(t, demo, "--set", "seed=7")
		if res.Seed != 7 {
			t.Errorf("seed %d, want 7", res.Seed)
		}
		if res.Digest == base {
			t.Errorf("seed 7 ends with seed 1's digest %s", base)
		}
	})
	t.Run("OutOfProcess", func(t *testing.T) {
		t.Parallel()
		res := runResults(t, filepath.Join(stagedGraphs(t), "demo-subprocess.yaml"))
		if res.Digest != base {
			t.Errorf("demo-subprocess.yaml: digest %s, demo.yaml %s", res.Digest, base)
		}
		for _, p := range res.Plugins {
			if !p.Remote {
				t.Errorf("%s plugin %s ran in process", p.Role, p.Ref)
			}
		}
	})
}

// TestRunExternalNATS runs the demo against a separately started
// nats-server: the stages meet there instead of on an embedded server, the
// trace still joins every stage's span across it, and the model ends the
// same.
func TestRunExternalNATS(t *testing.T) {
	t.Parallel()
	url := startNATSServer(t, needBin(t, "nats-server"))
	base := wantDemoDigest(t)
	res := checkTrace(t, demo, "--nats", url)
	if res.Digest != base {
		t.Errorf("--nats %s: digest %s, embedded server %s", url, res.Digest, base)
	}
}

// TestRunFailingStage runs a graph whose cache plugin (testdata/failcache,
// built here) refuses batch 3: the run fails naming the stage, the batch
// and the cause, and writes no results file.
func TestRunFailingStage(t *testing.T) {
	t.Parallel()
	bin := buildFailCache(t)
	dir := t.TempDir()
	graph := filepath.Join(dir, "fail.yaml")
	writeGraph(t, graph, "testdata/good.yaml", map[string]string{
		"name: good\n": "name: fail\ncache:\n  plugin: " + bin + "\n  size: 0.05\n  options:\n    fail_at: 3\n",
	})
	out := filepath.Join(dir, "r.json")
	r := flowrun(t, "run", graph, "-q", "--out", out)
	var se *engine.StageError
	if !errors.As(r.err, &se) {
		t.Fatalf("run: %v, want a *engine.StageError\nstderr:\n%s", r.err, r.stderr)
	}
	if se.Stage != "plan/plan" || se.Seq != 3 {
		t.Errorf("failed stage %s on batch %d, want plan/plan on batch 3", se.Stage, se.Seq)
	}
	var ue usageError
	if errors.As(r.err, &ue) {
		t.Errorf("a failed run is reported as a usage error (exit code 2): %v", r.err)
	}
	for _, want := range []string{"plan/plan", "batch 3", "failcache: refusing batch 3"} {
		if !strings.Contains(r.err.Error(), want) {
			t.Errorf("error %q does not mention %q", r.err, want)
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed run left %s (stat: %v)", out, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".results-*")); len(m) > 0 {
		t.Errorf("a failed run left temporary results %v", m)
	}
}

// buildFailCache builds testdata/failcache once per test binary.
var buildFailCache = func() func(t *testing.T) string {
	var (
		once sync.Once
		path string
		out  []byte
		err  error
	)
	return func(t *testing.T) string {
		t.Helper()
		once.Do(func() {
			path = filepath.Join(testTmp, "failcache")
			out, err = exec.Command("go", "build", "-o", path, "./testdata/failcache").CombinedOutput()
		})
		if err != nil {
			t.Fatalf("go build ./testdata/failcache: %v\n%s", err, out)
		}
		return path
	}
}()

// writeGraph writes to dst the graph at src with each old string replaced
// by its new one; every old string must occur.
func writeGraph(t *testing.T, dst, src string, replace map[string]string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for old, new := range replace {
		if !strings.Contains(s, old) {
			t.Fatalf("%s has no %q", src, old)
		}
		s = strings.Replace(s, old, new, 1)
	}
	if err := os.WriteFile(dst, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
