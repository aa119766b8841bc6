package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/bench"
)

// shadowBenchPolicies are the three built-in policies the shadow overhead
// benchmark shadows graphs/scratchpipe.yaml with (the policies its
// pipelined graph with Storage accepts), as the stage lists them, with
// BIN for the directory of their binaries or "builtin:".
const shadowBenchPolicies = `      - {plugin: BINscratchpipe, size: 0.05}
      - {plugin: BINscratchpipe, size: 0.1}
      - {plugin: BINstatic, size: 0.05, options: {profile: frequencies, warmup_batches: 16}}
`

// BenchmarkShadowServing: what three shadow policies cost the serving path
// of graphs/scratchpipe.yaml at its defaults, as the ratio of its wall
// time per batch with them to without, the two run in alternated pairs
// (bench.MeasureShadowOverhead; FLOWRUN_SHADOW_PAIRS, default 5), the
// load average logged with each pair. builtin names the builtins with the
// stage's defaults (each in a process of its own, niced 19);
// builtin-in-process runs them in the run's process (own_process: false);
// binaries names their plugin binaries (FLOWRUN_BIN, scripts/build.sh).
//
//	go test -run '^$' -bench 'ShadowServing/builtin$' -benchtime 1x ./cmd/flowrun
func BenchmarkShadowServing(b *testing.B) {
	pairs := 5
	if s := os.Getenv("FLOWRUN_SHADOW_PAIRS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		pairs = n
	}
	graph := filepath.Join(repoGraphs, "scratchpipe.yaml")
	r := benchRunner{quiet: true, stderr: io.Discard}
	plain, err := r.Check(graph, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("builtin", func(b *testing.B) {
		benchShadowServing(b, r, plain, shadowedGraph(b, graph, "builtin:", ""), pairs)
	})
	b.Run("builtin-in-process", func(b *testing.B) {
		benchShadowServing(b, r, plain, shadowedGraph(b, graph, "builtin:", "    own_process: false\n"), pairs)
	})
	b.Run("binaries", func(b *testing.B) {
		bins := needBins(b, "flowrun-cache-scratchpipe", "flowrun-cache-static")
		benchShadowServing(b, r, plain, shadowedGraph(b, graph, filepath.Dir(bins[0])+"/flowrun-cache-", ""), pairs)
	})
}

func benchShadowServing(b *testing.B, r benchRunner, plain bench.Graph, path string, pairs int) {
	shadowed, err := r.Check(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		o, err := bench.MeasureShadowOverhead(context.Background(), plain, shadowed, pairs, func(i int, p bench.OverheadPair) {
			b.Logf("pair %d: serving %.1f ms/batch without, %.1f with (%.3f×); steady state %.1f and %.1f (%.3f×); end to end %.1f; %d batches behind, drained in %.0f ms; load %s",
				i, p.WithoutMs, p.WithMs, p.WithMs/p.WithoutMs, p.SteadyWithoutMs, p.SteadyWithMs, p.SteadyWithMs/p.SteadyWithoutMs,
				p.WithEndToEndMs, p.BehindBatches, p.DrainMs, loadAverage())
		})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(o.Ratio, "serving-ratio")
		b.ReportMetric(o.Steady, "steady-ratio")
		b.ReportMetric(o.EndToEnd, "end-to-end-ratio")
	}
}

// shadowedGraph writes graph with a shadow stage fed by load beside plan,
// listing shadowBenchPolicies with prefix for BIN, with the stage's other
// keys (YAML lines) extra, and returns its path.
func shadowedGraph(tb testing.TB, graph, prefix, extra string) string {
	tb.Helper()
	src, err := os.ReadFile(graph)
	if err != nil {
		tb.Fatal(err)
	}
	s := strings.Replace(string(src), "    kind: load\n    out: [batches]", "    kind: load\n    out: [batches, shadowed]", 1)
	policies := strings.ReplaceAll(shadowBenchPolicies, "BIN", prefix)
	s = strings.Replace(s, "\nstages:\n", "\nstages:\n  shadow:\n    kind: shadow\n    in: shadowed\n    device: gpu\n"+extra+"    policies:\n"+policies, 1)
	if s == string(src) {
		tb.Fatalf("%s: no load stage to wire the shadow to", graph)
	}
	path := filepath.Join(tb.TempDir(), filepath.Base(graph))
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

// loadAverage is the 1-minute load average ("?" where it cannot be read).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}
