package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/search"
	"github.com/flowrun/flowrun/framework/serving"
)

// searchSmall keeps the searched designs tiny: 20 queries of 256
// candidates of demo-inference (no pacing: the modeled clock only).
var searchSmall = []string{"--set", "dataset.batches=20"}

// A search over a few tiny designs reports, for each, exactly the NDCG
// and the p99 at each QPS that a plain flowrun run of that design with
// the same serving section reports; a design overloaded at a QPS is
// reported overloaded there, with no p99, and is not a frontier point.
func TestSearchMatchesRun(t *testing.T) {
	graph := filepath.Join(repoGraphs, "demo-inference.yaml")
	out := filepath.Join(t.TempDir(), "search.json")
	args := append([]string{"search", graph, "--sweep", "stages.filter.k=8,32", "--sweep", "serving.servers.host=1,2",
		"--qps", "2000,12000", "--sla-ms", "1", "--out", out}, searchSmall...)
	r := mustFlowrun(t, args...)
	for _, want := range []string{"overload (host at", "quality–p99 frontier", "best design per latency target", "modeled"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table without %q:\n%s", want, r.stdout)
		}
	}
	var res search.Result
	if err := readJSONFile(out, &res); err != nil {
		t.Fatal(err)
	}
	if res.Kind != search.Kind || len(res.Designs) != 4 || len(res.Frontiers) != 2 || len(res.Best) != 2 {
		t.Fatalf("result %+v", res)
	}
	overloaded := 0
	for _, d := range res.Designs {
		if d.Error != "" || d.NDCG == nil || len(d.Serving) != 2 {
			t.Fatalf("design %d: %+v", d.ID, d)
		}
		plain := runResults(t, graph, append(append(slices.Clone(searchSmall), setsOf(d.Point)...),
			"--set", "serving.qps=2000", "--set", "serving.sweep_qps=[12000]", "--set", "serving.sla_ms=1")...)
		if plain.Metrics.NDCG == nil || *plain.Metrics.NDCG != *d.NDCG || plain.Digest != d.Digest {
			t.Errorf("design %d (%s): NDCG %v digest %s, plain run %v %s", d.ID, d.Name, *d.NDCG, d.Digest, plain.Metrics.NDCG, plain.Digest)
		}
		reps := append([]*serving.Report{plain.Serving.Modeled}, plain.Serving.ModeledSweep...)
		for i, l := range d.Serving {
			rep := reps[i]
			if rep.OfferedQPS != l.QPS {
				t.Fatalf("design %d: report %d at %g QPS, want %g", d.ID, i, rep.OfferedQPS, l.QPS)
			}
			switch {
			case rep.Overload != nil:
				overloaded++
				if l.Overload != rep.Overload.Reason || l.P99Ms != nil || l.Frontier {
					t.Errorf("design %d at %g QPS: %+v, the plain run is overloaded: %s", d.ID, l.QPS, l, rep.Overload.Reason)
				}
				if slices.Contains(res.Frontiers[i].Designs, d.ID) {
					t.Errorf("overloaded design %d on the frontier at %g QPS", d.ID, l.QPS)
				}
			case l.P99Ms == nil || rep.LatencyMs == nil || *l.P99Ms != rep.LatencyMs.P99 || *l.P50Ms != rep.LatencyMs.P50 ||
				l.WithinSLA == nil || rep.WithinSLA == nil || *l.WithinSLA != *rep.WithinSLA:
				t.Errorf("design %d at %g QPS: %+v, plain run %+v", d.ID, l.QPS, l, rep.LatencyMs)
			}
		}
	}
	// One host server saturates at about 11,200 QPS: the two designs on
	// one server are overloaded at 12,000, those on two are not.
	if overloaded != 2 {
		t.Errorf("%d overloaded design points, want 2", overloaded)
	}
	for i, f := range res.Frontiers {
		if len(f.Designs) == 0 {
			t.Errorf("no frontier at %g QPS", res.QPS[i])
		}
	}
	rep := mustFlowrun(t, "report", out, "--out", t.TempDir())
	if !strings.Contains(rep.stdout, "frontier.png") {
		t.Errorf("report drew no frontier:\n%s", rep.stdout)
	}
}

// --qps is required, and bad rates are usage errors before anything runs.
func TestSearchUsage(t *testing.T) {
	graph := filepath.Join(repoGraphs, "demo-inference.yaml")
	for _, args := range [][]string{
		{"search", graph},
		{"search", graph, "--qps", "0"},
		{"search", graph, "--qps", "5,5"},
		{"search", graph, "--qps", "5", "--json", "-q"},
	} {
		r := flowrun(t, args...)
		if r.err == nil || r.stdout != "" {
			t.Errorf("%v: err %v, stdout %q", args, r.err, r.stdout)
		}
	}
}

// setsOf turns a sweep point into --set flags.
func setsOf(point []string) []string {
	var out []string
	for _, kv := range point {
		out = append(out, "--set", kv)
	}
	return out
}

// readJSONFile decodes the JSON file at path into v.
func readJSONFile(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// --sweep GRAPH:KEY=... sweeps KEY in that graph only (named by its file
// or its stem); values may hold a colon; a key given twice for one graph
// and an unknown graph are refused.
func TestParseSearchSweeps(t *testing.T) {
	graphs := []string{"graphs/a.yaml", "graphs/b.yaml"}
	all, per, err := parseSearchSweeps([]string{"devices.host.plugin=builtin:cpu-dram,builtin:hbm", "b:stages.keep.k=64,256", "graphs/b.yaml:x=1"}, graphs)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].Key != "devices.host.plugin" || !slices.Equal(all[0].Values, []string{"builtin:cpu-dram", "builtin:hbm"}) {
		t.Errorf("common sweep %+v", all)
	}
	if b := per["graphs/b.yaml"]; len(per) != 1 || len(b) != 2 || b[0].Key != "stages.keep.k" || b[1].Key != "x" {
		t.Errorf("per graph %+v", per)
	}
	for _, bad := range [][]string{{"c:k=1"}, {"k=1", "a:k=2"}, {"a:k=1", "a:k=2"}} {
		if _, _, err := parseSearchSweeps(bad, graphs); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
