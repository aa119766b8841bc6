package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/data"
	"github.com/flowrun/flowrun/framework/data/datatest"
)

// writeFixture writes a fixture made by write to a file in a temporary
// directory and returns its path.
func writeFixture(t *testing.T, name string, write func(*os.File) error) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// trainGraph is a load → train graph over a batch file of the given shape,
// written beside it.
func trainGraph(t *testing.T, frb string, h *data.Header) string {
	t.Helper()
	g := fmt.Sprintf(`seed: 3
dataset: {kind: file, path: %s, batches: 300, batch_size: 32, eval_batches: 8, dim: 4,
          tables: %d, lookups: %d, dense_features: %d, rows: %d}
model: {plugin: builtin:logreg, options: {learning_rate: 0.05}}
stages:
  load: {kind: load, out: [batches]}
  train: {kind: train, in: batches, learning_rate: 4}
`, frb, h.Tables, h.Lookups, h.Dense, h.MaxRows())
	path := filepath.Join(filepath.Dir(frb), "train.yaml")
	if err := os.WriteFile(path, []byte(g), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Criteo and MovieLens fixtures, made here, round-trip through
// `flowrun convert` and train with `flowrun run`: the loss falls.
func TestConvertFixturesAndTrain(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		format, name string
		write        func(*os.File) error
		args         []string
	}{
		{"criteo", "train.txt", func(f *os.File) error { return datatest.CriteoTSV(f, 3000, 11) }, []string{"--rows", "5000"}},
		{"movielens", "ratings.csv", func(f *os.File) error { return datatest.MovieLensCSV(f, 60, 80, 11) }, nil},
	} {
		t.Run(c.format, func(t *testing.T) {
			in := writeFixture(t, c.name, c.write)
			frb := filepath.Join(filepath.Dir(in), c.format+".frb")
			r := mustFlowrun(t, append([]string{"convert", "--format", c.format, in, "--out", frb}, c.args...)...)
			if !strings.Contains(r.stdout, "wrote      "+frb) || !strings.Contains(r.stdout, "dataset    kind: file, path: "+frb) {
				t.Errorf("convert printed:\n%s", r.stdout)
			}
			h, err := data.ReadHeader(frb)
			if err != nil {
				t.Fatal(err)
			}
			res := runResults(t, trainGraph(t, frb, h))
			loss := res.Metrics.Loss
			if loss == nil || !(loss.LastTenthMean < loss.FirstTenthMean-0.02) {
				t.Fatalf("loss did not fall: %+v", loss)
			}
			t.Logf("%s: %d samples; loss %.3f → %.3f; held-out AUC %.3f", c.format, h.Samples,
				loss.FirstTenthMean, loss.LastTenthMean, *res.Metrics.AUC)
		})
	}
}

// `flowrun gen` writes the demo's dataset; the demo run from the file ends
// with the demo's own digest.
func TestGenFileRunsToTheDemoDigest(t *testing.T) {
	t.Parallel()
	frb := filepath.Join(t.TempDir(), "demo.frb")
	r := mustFlowrun(t, "gen", demo, "--out", frb)
	if !strings.Contains(r.stdout, "train on it: flowrun run") {
		t.Errorf("gen printed:\n%s", r.stdout)
	}
	res := runResults(t, demo, "--set", "dataset.kind=file", "--set", "dataset.path="+frb)
	if want := wantDemoDigest(t); res.Digest != want {
		t.Errorf("digest from the file %s, the demo's %s", res.Digest, want)
	}
}

// flowrun validate opens a graph's batch file: a missing file, or one of
// another shape, is a graph error (exit 2) at the dataset key to change.
func TestValidateOpensTheBatchFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	frb := filepath.Join(dir, "demo.frb")
	mustFlowrun(t, "gen", demo, "--out", frb)
	mustFlowrun(t, "validate", demo, "--set", "dataset.kind=file", "--set", "dataset.path="+frb)
	for _, c := range []struct {
		sets []string
		want string
	}{
		{[]string{"dataset.path=" + filepath.Join(dir, "missing.frb")}, "dataset::path: no batch file"},
		{[]string{"dataset.path=" + frb, "dataset.tables=3"}, "dataset::tables: the file " + frb + " has 4 tables, the graph 3"},
	} {
		args := []string{"validate", demo, "--set", "dataset.kind=file"}
		for _, set := range c.sets {
			args = append(args, "--set", set)
		}
		r := flowrun(t, args...)
		if r.err == nil || !strings.Contains(r.stdout+r.stderr+r.err.Error(), c.want) {
			t.Errorf("flowrun %s: %v\n%s%s\nwant %q", strings.Join(args, " "), r.err, r.stdout, r.stderr, c.want)
		}
	}
}

// Bad arguments are usage errors; bad input names its file and line and
// leaves no output.
func TestConvertErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "out.frb")
	bad := filepath.Join(dir, "bad.txt")
	good := strings.Repeat("\t", 39)
	if err := os.WriteFile(bad, []byte("1"+good+"\n0\t1\t2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args  []string
		usage bool
		want  string
	}{
		{[]string{"convert", bad, "--out", out}, true, "--format criteo or --format movielens"},
		{[]string{"convert", "--format", "parquet", bad, "--out", out}, true, `unknown --format "parquet"`},
		{[]string{"convert", "--format", "criteo", bad}, true, "needs --out"},
		{[]string{"convert", "--format", "criteo", bad, "--out", out, "--rows", "-1"}, true, "--rows must be ≥ 1"},
		{[]string{"convert", "--format", "criteo", filepath.Join(dir, "missing.txt"), "--out", out}, false, "missing.txt"},
		{[]string{"convert", "--format", "criteo", bad, "--out", out}, false, bad + ":2: 3 tab-separated fields, want 40"},
		{[]string{"gen", demo}, true, "needs --out"},
		{[]string{"gen", demo, "--out", out, "--set", "dataset.kind=file", "--set", "dataset.path=x.frb"}, true, "gen writes synthetic data"},
	} {
		r := flowrun(t, c.args...)
		var ue usageError
		if r.err == nil || !strings.Contains(r.err.Error(), c.want) || errors.As(r.err, &ue) != c.usage {
			t.Errorf("flowrun %s: %v (usage error: %v), want %q (usage error: %v)",
				strings.Join(c.args, " "), r.err, errors.As(r.err, &ue), c.want, c.usage)
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed conversion left %s (%v)", out, err)
	}
}

// Input may be gzipped, or standard input.
func TestConvertGzipAndStdin(t *testing.T) {
	t.Parallel()
	gz := writeFixture(t, "train.txt.gz", func(f *os.File) error {
		zw := gzip.NewWriter(f)
		if err := datatest.CriteoTSV(zw, 50, 1); err != nil {
			return err
		}
		return zw.Close()
	})
	out := filepath.Join(t.TempDir(), "gz.frb")
	mustFlowrun(t, "convert", "--format", "criteo", gz, "--out", out, "-q")
	if h, err := data.ReadHeader(out); err != nil || h.Samples != 50 {
		t.Fatalf("from .gz: %+v, %v", h, err)
	}

	var csv bytes.Buffer
	datatest.MovieLensCSV(&csv, 5, 6, 1)
	root := newRootCmd()
	root.SetArgs([]string{"convert", "--format", "movielens", "-", "--out", out, "--limit", "7"})
	root.SetIn(&csv)
	root.SetOut(io.Discard)
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if h, err := data.ReadHeader(out); err != nil || h.Samples != 7 || h.Source != "movielens" {
		t.Fatalf("from stdin: %+v, %v", h, err)
	}
}

// A batch file shorter than the run is announced, not repeated silently:
// the summary says how many epochs ran and results.json has them.
func TestShortBatchFileIsAnnounced(t *testing.T) {
	t.Parallel()
	frb := filepath.Join(t.TempDir(), "short.frb")
	mustFlowrun(t, "gen", demo, "--out", frb, "--set", "dataset.batches=4", "--set", "dataset.eval_batches=1")
	file := []string{"--set", "dataset.kind=file", "--set", "dataset.path=" + frb, "--set", "dataset.eval_batches=1"}
	res := runResults(t, demo, append(file, "--set", "dataset.batches=10")...)
	if d := res.Dataset; d == nil || d.FileBatches != 4 || d.Epochs != 2.5 || d.Path != frb {
		t.Errorf("results.json dataset = %+v, want 4 file batches and 2.5 epochs", d)
	}
	r := mustFlowrun(t, append([]string{"run", demo}, append(file, "--set", "dataset.batches=10")...)...)
	if !strings.Contains(r.stdout, "2.50 epochs (the data repeats") {
		t.Errorf("the summary does not say the data repeats:\n%s", r.stdout)
	}
	res = runResults(t, demo, append(file, "--set", "dataset.batches=4")...)
	if d := res.Dataset; d == nil || d.Epochs != 1 {
		t.Errorf("results.json dataset = %+v, want 1 epoch", d)
	}
	if res = runResults(t, demo, "--set", "dataset.batches=2"); res.Dataset != nil {
		t.Errorf("synthetic data has a dataset use: %+v", res.Dataset)
	}
}
