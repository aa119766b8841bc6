package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/bench"
	"github.com/flowrun/flowrun/framework/data"
	"github.com/flowrun/flowrun/framework/data/datatest"
)

// Criteo-shaped data (tables of different sizes) under every cached
// design trains exactly what the no-cache baseline trains: the same model
// digest, whether the sizes are Kaggle's (the criteo-kaggle locality) or
// given by dataset.table_rows with tables smaller than the cache (Storage
// and the policies give those only their own rows).
func TestTableRowsDigestsEqual(t *testing.T) {
	graphs := []string{filepath.Join(repoGraphs, "criteo-no-cache.yaml")}
	for _, g := range []string{"no-cache", "static-cache", "strawman", "scratchpipe"} {
		graphs = append(graphs, filepath.Join(repoGraphs, g+".yaml"))
	}
	small := []string{"--set", "dataset.batches=6", "--set", "dataset.eval_batches=0", "--set", "dataset.batch_size=128",
		"--set", "dataset.tables=26", "--set", "dataset.lookups=1", "--set", "cache.size=1024"}
	for name, sets := range map[string][]string{
		"criteo-kaggle": {"--set", "dataset.locality=criteo-kaggle"},
		"table_rows": {"--set", "dataset.locality=zipf", "--set", "dataset.tables=4", "--set", "dataset.lookups=2",
			"--set", "dataset.table_rows=[3, 700, 1500, 90000]", "--set", "cache.size=2048"},
	} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "bench.json")
			args := append(append([]string{"bench"}, graphs...), append(append(append([]string(nil), small...), sets...), "--out", out)...)
			mustFlowrun(t, args...)
			var rep bench.Comparison
			if err := readBench(out, &rep); err != nil {
				t.Fatal(err)
			}
			if len(rep.Runs) != len(graphs) || !rep.DigestsEqual {
				t.Fatalf("digests differ: %+v", rep.Runs)
			}
			for _, r := range rep.Runs {
				if r.Error != "" {
					t.Errorf("%s: %s", r.Graph, r.Error)
				}
				if r.Results == nil || r.Results.Metrics.Extra["dsf_ratio"] <= 0 || r.Results.Metrics.Extra["dsf_ratio"] > 1 {
					t.Errorf("%s: no dsf_ratio in the results", r.Graph)
				}
			}
		})
	}
}

// ScratchPipe's worst-case check is per table: a cache smaller than the
// window is fine when every table is smaller still (each gets only its
// own rows), and refused, naming the largest table's rows, when one is not.
func TestTableRowsWorstCase(t *testing.T) {
	graph := filepath.Join(repoGraphs, "scratchpipe.yaml")
	sets := []string{"--set", "dataset.tables=4", "--set", "dataset.lookups=2", "--set", "dataset.batch_size=128", "--set", "cache.size=1024"}
	// window: 2 lookups × 128 × 6 batches = 1536 rows per table
	mustFlowrun(t, append([]string{"validate", graph, "--set", "dataset.table_rows=[3, 700, 1000, 1024]"}, sets...)...)
	r := flowrun(t, append([]string{"validate", graph, "--set", "dataset.table_rows=[3, 700, 1000, 1500]"}, sets...)...)
	if r.err == nil || !strings.Contains(r.stderr+r.stdout, "set cache.size ≥ 1500") {
		t.Errorf("err %v, want the worst case of the 1500-row table in:\n%s%s", r.err, r.stdout, r.stderr)
	}
}

// convert --categorify writes a table per field of its own size and says
// the dataset.table_rows a graph reads it with; that graph trains on it.
func TestConvertCategorifyAndTrain(t *testing.T) {
	tsv := writeFixture(t, "train.txt", func(f *os.File) error { return datatest.CriteoTSV(f, 600, 4) })
	frb := filepath.Join(filepath.Dir(tsv), "kaggle.frb")
	r := mustFlowrun(t, "convert", "--format", "criteo", tsv, "--out", frb, "--categorify", "--min-count", "2")
	h, err := data.ReadHeader(frb)
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Join(strings.Fields(fmt.Sprint(h.Rows)), ", ")
	if !strings.Contains(r.stdout, "table_rows: "+rows) {
		t.Fatalf("output without table_rows %s:\n%s", rows, r.stdout)
	}
	g := fmt.Sprintf(`seed: 3
dataset: {kind: file, path: %s, batches: 20, batch_size: 25, eval_batches: 4, dim: 4,
          tables: 26, lookups: 1, dense_features: 13, table_rows: %s}
model: {plugin: builtin:logreg, options: {learning_rate: 0.05}}
stages:
  load: {kind: load, out: [batches]}
  train: {kind: train, in: batches, learning_rate: 4}
`, frb, rows)
	path := filepath.Join(filepath.Dir(frb), "train.yaml")
	if err := os.WriteFile(path, []byte(g), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runResults(t, path)
	if res.Digest == "" || res.Metrics.Extra["dsf_ratio"] <= 0 {
		t.Errorf("results %+v", res.Metrics)
	}
	for _, bad := range [][]string{
		{"--format", "movielens", tsv, "--out", frb, "--categorify"},
		{"--format", "criteo", tsv, "--out", frb, "--min-count", "2"},
		{"--format", "criteo", "-", "--out", frb, "--categorify", "--min-count", "2"},
	} {
		var ue usageError
		if r := flowrun(t, append([]string{"convert"}, bad...)...); !errors.As(r.err, &ue) {
			t.Errorf("convert %v: err %v, want a usage error", bad, r.err)
		}
	}
}

// flowrun gen writes Criteo-shaped data with each table's rows in the
// header, and the graph trains on the file to the synthetic run's digest.
func TestGenCriteoKaggleFile(t *testing.T) {
	graph := filepath.Join(repoGraphs, "criteo-no-cache.yaml")
	frb := filepath.Join(t.TempDir(), "criteo.frb")
	sets := []string{"--set", "dataset.batches=3", "--set", "dataset.eval_batches=1", "--set", "dataset.batch_size=256"}
	mustFlowrun(t, append([]string{"gen", graph, "--out", frb, "-q"}, sets...)...)
	h, err := data.ReadHeader(frb)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Rows) != 26 || h.Rows[13] != 10131227 || h.Rows[0] != 4 {
		t.Fatalf("header rows %v, want Kaggle's", h.Rows)
	}
	syn := runResults(t, graph, sets...)
	file := runResults(t, graph, append(sets, "--set", "dataset.kind=file", "--set", "dataset.path="+frb)...)
	if syn.Digest != file.Digest {
		t.Errorf("digest from the file %s, from the generator %s", file.Digest, syn.Digest)
	}
}
