package main

// Tests of what a newcomer meets in a first hour: the exit-code table,
// plugins that are not plugins, --set swapping a policy, where spans and
// the summary go, a missing trace collector, a profile-limited cache.

import (
	"errors"
	"github.com/flowrun/flowrun/framework/pluginhost"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestRunBadGraphsExitLikeValidate: run refuses every graph under
// testdata/bad as validate does, with the same exit code (2, an invalid
// graph) and the same located errors; a bad built-in plugin option
// included, which run used to find only when configuring it (exit 1).
func TestRunBadGraphsExitLikeValidate(t *testing.T) {
	t.Parallel()
	forEachBadGraph(t, func(t *testing.T, path string) {
		v := flowrun(t, "validate", path)
		r := flowrun(t, "run", "-q", path)
		if exitCode(r.err) != exitCode(v.err) || exitCode(r.err) != exitUsage {
			t.Fatalf("run exits %d (%v), validate %d: want both %d", exitCode(r.err), r.err, exitCode(v.err), exitUsage)
		}
		var ue usageError
		errors.As(r.err, &ue)
		checkReported(t, path, ue.err.Error(), wantedErrors(t, path))
	})
}

// TestRunNotAPlugin: an executable that is no plugin named as one is an
// invalid graph: exit 2, the error at the graph key that names it.
func TestRunNotAPlugin(t *testing.T) {
	t.Parallel()
	notPlugin, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true executable")
	}
	for _, key := range []string{"model.plugin", "devices.gpu.plugin", "kernel.plugin"} {
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			r := flowrun(t, "run", "-q", "testdata/good.yaml", "--set", key+"="+notPlugin)
			want := "testdata/good.yaml: " + strings.ReplaceAll(key, ".", "::") + ": "
			if exitCode(r.err) != exitUsage || !strings.HasPrefix(r.err.Error(), want) {
				t.Errorf("run with --set %s=%s: exit %d, %v; want exit %d and an error starting %q",
					key, notPlugin, exitCode(r.err), r.err, exitUsage, want)
			}
		})
	}
}

// TestRunWrongKindPlugin: a plugin binary of another kind is refused the
// same way, in one line.
func TestRunWrongKindPlugin(t *testing.T) {
	t.Parallel()
	kernelBin := needBin(t, "flowrun-kernel-cpu")
	r := flowrun(t, "run", "-q", "testdata/good.yaml", "--set", "model.plugin="+kernelBin)
	want := `testdata/good.yaml: model::plugin: model plugin "` + kernelBin + `": `
	if exitCode(r.err) != exitUsage || !strings.HasPrefix(r.err.Error(), want) || strings.Contains(r.err.Error(), "\n") ||
		!errors.Is(r.err, pluginhost.ErrWrongKind) {
		t.Errorf("exit %d, %q; want exit %d and one line starting %q, a pluginhost.ErrWrongKind", exitCode(r.err), r.err, exitUsage, want)
	}
}

// TestExitCodeTable: every command keeps the table of flowrun --help: a
// command or argument flowrun does not know is a usage error (2), a group
// of commands alone prints its help (0).
func TestExitCodeTable(t *testing.T) {
	t.Parallel()
	notPlugin, _ := exec.LookPath("true")
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"nosuch"}, exitUsage},
		{[]string{"plugins", "bogus"}, exitUsage},
		{[]string{"plugins"}, exitOK},
		{[]string{}, exitOK},
		{[]string{"version", "extra"}, exitUsage},
		{[]string{"run"}, exitUsage},
		{[]string{"plugins", "describe", notPlugin}, exitUsage},
		{[]string{"run", "-q", "testdata/good.yaml", "--set", "dataset.batches=0"}, exitUsage},
		{[]string{"validate", "testdata/good.yaml", "--set", "dataset.batches=0"}, exitUsage},
	} {
		r := flowrun(t, c.args...)
		if got := exitCode(r.err); got != c.want {
			t.Errorf("flowrun %s: exit %d (%v), want %d", strings.Join(c.args, " "), got, r.err, c.want)
		}
	}
}

// TestStaticCacheProfileLimit: a static cache whose warm-up profile saw
// fewer rows than it holds gets equal hit rates at larger sizes, and the
// results say why (the profile's distinct rows), so a flat sweep reads as
// the data it is.
func TestStaticCacheProfileLimit(t *testing.T) {
	t.Parallel()
	var hit []float64
	for _, size := range []string{"0.05", "0.1"} {
		res := runResults(t, demo, "--set", "cache.plugin=builtin:static", "--set", "cache.options={profile: frequencies, warmup_batches: 2}",
			"--set", "dataset.batches=6", "--set", "cache.size="+size)
		rows, limited := res.Cache.ProfileLimit()
		if !limited || rows < 1 || len(res.Cache.ProfileRows) != 4 {
			t.Fatalf("cache.size %s: profile rows %v of %d: want fewer than the cache holds", size, res.Cache.ProfileRows, res.Cache.Rows)
		}
		hit = append(hit, res.Cache.HitRate)
	}
	if hit[0] != hit[1] {
		t.Errorf("hit rates %v: a cache limited by its profile hit the same at both sizes", hit)
	}
}

// TestTraceStdoutKeepsStdoutJSON: with spans on stdout (JSON lines for a
// program), the summary goes to stderr, and --json, which would mix with
// them, is refused.
func TestTraceStdoutKeepsStdoutJSON(t *testing.T) {
	t.Parallel()
	r := mustFlowrun(t, "run", demo, "--set", "dataset.batches=2", "--trace", "stdout")
	if strings.Contains(r.stdout, "digest") || !strings.Contains(r.stderr, "digest") {
		t.Errorf("summary on stdout %q; stderr %q", r.stdout, r.stderr)
	}
	if r := flowrun(t, "run", demo, "--json", "--trace", "stdout"); exitCode(r.err) != exitUsage {
		t.Errorf("--json --trace stdout: exit %d (%v), want %d", exitCode(r.err), r.err, exitUsage)
	}
	for _, c := range []struct {
		flag string
		echo map[string]any
		want bool
	}{
		{"stdout", nil, true},
		{"none", map[string]any{"tracing": map[string]any{"exporter": "stdout"}}, false},
		{"", map[string]any{"tracing": map[string]any{"exporter": "stdout"}}, true},
		{"", map[string]any{}, false},
	} {
		if got := spansOnStdout(c.flag, c.echo); got != c.want {
			t.Errorf("spansOnStdout(%q, %v) = %v", c.flag, c.echo, got)
		}
	}
}

// TestNoCollector: an OTLP exporter with no collector listening is said at
// the start of the run, and again when its spans fail to go out; the run
// itself succeeds.
func TestNoCollector(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	r := mustFlowrun(t, "run", demo, "--set", "dataset.batches=2", "--trace", "otlp-grpc://"+addr)
	if !strings.Contains(r.stderr, "no trace collector at "+addr) || !strings.Contains(r.stderr, "spans not exported") {
		t.Errorf("stderr does not say the collector is missing:\n%s", r.stderr)
	}
	if got := checkCollector("file:x.jsonl", io.Discard); got != "" {
		t.Errorf("a file exporter probed: %q", got)
	}
}

// convert --help does not show a format as --format's value, as if it were
// a default: the flag has none.
func TestConvertFormatHasNoDefault(t *testing.T) {
	f := newConvertCmd().Flags().Lookup("format")
	name, _ := pflag.UnquoteUsage(f)
	if f.DefValue != "" || name == "criteo" || name == "movielens" {
		t.Errorf("--format shows %q (default %q)", name, f.DefValue)
	}
}

// TestSetSwapsAPolicy is the newcomer's first experiment: another policy
// binary on scratchpipe.yaml with --set alone, the graph's own cache
// options removed (before, `victim` stayed and the binary refused it), and
// the binary named relative to the working directory.
func TestSetSwapsAPolicy(t *testing.T) {
	t.Parallel()
	bin := needBin(t, "flowrun-cache-clock")
	rel, err := filepath.Rel(".", bin)
	if err != nil {
		rel = bin
	}
	graph := filepath.Join(repoGraphs, "scratchpipe.yaml")
	swap := []string{"--set", "cache.plugin=" + rel, "--set", "cache.options=null", "--set", "pipeline=sequential"}
	mustFlowrun(t, append([]string{"validate", graph}, swap...)...)
	res := runResults(t, graph, append(swap, "--set", "dataset.batches=3", "--set", "dataset.eval_batches=1")...)
	if res.Cache == nil || res.Cache.Plugin != rel {
		t.Errorf("cache %+v, want the policy %s", res.Cache, rel)
	}
	r := flowrun(t, append([]string{"validate", graph}, swap[:2]...)...)
	if exitCode(r.err) != exitUsage || !strings.Contains(r.stderr, "victim") {
		t.Errorf("with the graph's options kept: exit %d, want %d naming victim:\n%s", exitCode(r.err), exitUsage, r.stderr)
	}
}
