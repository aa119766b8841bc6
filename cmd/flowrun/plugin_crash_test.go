package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flowrun/framework/results"
)

// clockGraph writes the demo graph with its cache policy replaced by the
// third-party example plugin (examples/cache-plugin, built as
// flowrun-cache-clock) run as a subprocess. The graph names the binary by a
// path relative to its own directory, as a user would. It returns the
// graph's path and the plugin binary's real path.
func clockGraph(t *testing.T) (graph, plugin string) {
	t.Helper()
	bin := needBin(t, "flowrun-cache-clock")
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(dir, "bin", "flowrun-cache-clock")); err != nil {
		t.Fatal(err)
	}
	graph = filepath.Join(dir, "demo-clock.yaml")
	writeGraph(t, graph, demo, map[string]string{
		"name: demo\n":            "name: demo-clock\n",
		"  plugin: builtin:lru\n": "  plugin: bin/flowrun-cache-clock\n",
	})
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		t.Fatal(err)
	}
	return graph, real
}

// TestExamplePluginSubprocess runs the demo with the example CLOCK policy
// out of process: it runs to the end, the cache is the plugin's, and the
// model ends as with the built-in LRU (where a row is cached never changes
// the arithmetic).
func TestExamplePluginSubprocess(t *testing.T) {
	t.Parallel()
	graph, _ := clockGraph(t)
	res := runResults(t, graph)
	var cache *results.PluginUse
	for i, p := range res.Plugins {
		if p.Role == "cache" {
			cache = &res.Plugins[i]
		}
	}
	switch {
	case cache == nil:
		t.Fatalf("no cache plugin in %+v", res.Plugins)
	case cache.Name != "clock" || !cache.Remote || filepath.Base(cache.Ref) != "flowrun-cache-clock":
		t.Errorf("cache plugin %+v, want the clock binary out of process", *cache)
	}
	for _, s := range res.Stages {
		if s.Batches != res.Batches+res.EvalBatches {
			t.Errorf("stage %s: %d batches, want %d", s.Name, s.Batches, res.Batches+res.EvalBatches)
		}
	}
	if res.Cache == nil || res.Cache.Hits == 0 || res.Cache.Misses == 0 {
		t.Errorf("cache statistics %+v, want hits and misses", res.Cache)
	}
	if base := wantDemoDigest(t); res.Digest != base {
		t.Errorf("digest with the clock plugin %s, with builtin:lru %s", res.Digest, base)
	}
}

// TestExamplePluginKilled kills the clock plugin's process in the middle of
// a run long enough to take several seconds: flowrun must fail within a
// second of the kill, exit non-zero, name the plugin, and write no results.
func TestExamplePluginKilled(t *testing.T) {
	t.Parallel()
	flowrunBin := needBin(t, "flowrun")
	graph, plugin := clockGraph(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "r.json")
	spans := filepath.Join(dir, "spans.jsonl")
	// 1000 batches take seconds; the kill comes after a few.
	cmd := exec.Command(flowrunBin, "run", graph, "-q", "--set", "dataset.batches=1000",
		"--out", out, "--trace", "file:"+spans)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	finished := func() bool {
		select {
		case <-exited:
			return true
		default:
			return false
		}
	}

	// The plugin is a child of flowrun; the run is under way once some
	// batches have left the graph (the span file is written span by span).
	// Only then is the child the run's cache: validation starts the binary
	// once before, to ask its Needs, and stops it.
	var pid int
	deadline := time.Now().Add(30 * time.Second)
	for pid == 0 {
		if finished() {
			t.Fatalf("flowrun ended before the kill: %v\n%s", waitErr, stderr.String())
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: plugin pid %d, %d batches trained\n%s", pid, trainedBatches(spans), stderr.String())
		}
		if trainedBatches(spans) >= 10 {
			pid = childRunning(t, cmd.Process.Pid, plugin)
		}
		time.Sleep(10 * time.Millisecond)
	}

	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("flowrun still running 10s after its cache plugin was killed\n%s", stderr.String())
	}
	took := time.Since(killed)
	t.Logf("flowrun exited %v after the kill, after %d batches", took, trainedBatches(spans))

	var exit *exec.ExitError
	if !errors.As(waitErr, &exit) || exit.ExitCode() != exitFailure {
		t.Errorf("flowrun: %v, want exit code %d", waitErr, exitFailure)
	}
	if took > time.Second {
		t.Errorf("flowrun took %v to fail after the kill, want within a second", took)
	}
	// The last line is main's "flowrun: <error>".
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "flowrun: ") || !strings.Contains(last, "flowrun-cache-clock") {
		t.Errorf("error %q does not name the cache plugin flowrun-cache-clock\nstderr:\n%s", last, stderr.String())
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed run left %s (stat: %v)", out, err)
	}
}

// trainedBatches counts the train stage's spans in a span file being
// written.
func trainedBatches(path string) int {
	data, _ := os.ReadFile(path)
	return bytes.Count(data, []byte(`"name":"train/train"`))
}

// childRunning returns the pid of a child of parent running the binary exe,
// or 0 if there is none (yet).
func childRunning(t *testing.T, parent int, exe string) int {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		// No procfs (macOS, BSD): ask pgrep for the child by command line.
		out, _ := exec.Command("pgrep", "-P", strconv.Itoa(parent), "-f", exe).Output()
		pid, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0]))
		return pid
	}
	procs, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	for _, stat := range procs {
		data, err := os.ReadFile(stat)
		if err != nil {
			continue // gone
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(data, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(data[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(parent) {
			continue
		}
		dir := filepath.Dir(stat)
		if path, err := os.Readlink(filepath.Join(dir, "exe")); err == nil && path == exe {
			pid, _ := strconv.Atoi(filepath.Base(dir))
			return pid
		}
	}
	return 0
}
