package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// flowrun report draws every figure its inputs have data for, as PNG and
// SVG: from a results.json the breakdown and the loss, from a bench the
// speedups, from a bench with a cache.size sweep the hit rates. What the
// images hold is tested in framework/report.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	res := filepath.Join(dir, "results.json")
	mustFlowrun(t, append([]string{"run", filepath.Join(repoGraphs, "scratchpipe.yaml"), "-q", "--out", res}, benchSmall...)...)
	bench := filepath.Join(dir, "bench.json")
	args := append([]string{"bench", filepath.Join(repoGraphs, "static-cache.yaml"), filepath.Join(repoGraphs, "strawman.yaml")},
		append(benchSmall, "--sweep", "cache.size=0.05,0.2", "-q", "--out", bench)...)
	mustFlowrun(t, args...)

	out := filepath.Join(dir, "figures")
	r := mustFlowrun(t, "report", res, bench, "--out", out)
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		got = append(got, filepath.Base(line))
	}
	want := []string{"breakdown.png", "breakdown.svg", "speedup.png", "speedup.svg", "hitrate.png", "hitrate.svg", "loss.png", "loss.svg"}
	if !slices.Equal(got, want) {
		t.Fatalf("report wrote %v, want %v", got, want)
	}
	// Only the formats asked for.
	r = mustFlowrun(t, "report", res, "--out", filepath.Join(dir, "png"), "--format", "png")
	if strings.Contains(r.stdout, ".svg") || !strings.Contains(r.stdout, "breakdown.png") {
		t.Errorf("--format png wrote:\n%s", r.stdout)
	}
}

func TestReportUsage(t *testing.T) {
	dir := t.TempDir()
	notResults := filepath.Join(dir, "x.json")
	os.WriteFile(notResults, []byte(`{"a": 1}`), 0o644)
	for _, args := range [][]string{
		{"report"},
		{"report", notResults},
		{"report", notResults, "--out", dir, "--format", "gif"},
	} {
		r := flowrun(t, args...)
		var ue usageError
		if !errors.As(r.err, &ue) {
			t.Errorf("%v: err %v, want a usage error", args, r.err)
		}
	}
	if r := flowrun(t, "report", notResults, "--out", dir); r.err == nil || !strings.Contains(r.err.Error(), "neither a results.json") {
		t.Errorf("not a results file: %v", r.err)
	}
}
