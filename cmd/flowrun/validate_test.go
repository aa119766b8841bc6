package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestValidateShippedGraphs is `flowrun validate graphs/*.yaml`: every
// shipped graph is valid, with the plugin binaries it names built.
func TestValidateShippedGraphs(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(stagedGraphs(t), "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r := flowrun(t, append([]string{"validate"}, files...)...)
	if r.err != nil {
		t.Fatalf("validate %v: %v\n%s", files, r.err, r.stderr)
	}
	for _, f := range files {
		if !strings.Contains(r.stdout, f+": ok\n") {
			t.Errorf("validate did not report %s ok; stdout:\n%s", f, r.stdout)
		}
	}

	// The same through the binary, as the README writes it.
	cmd := exec.Command(needBin(t, "flowrun"), append([]string{"validate"}, files...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
}

// TestValidateGood checks the graph every bad case is derived from, so that
// each case fails for the reason it marks and no other.
func TestValidateGood(t *testing.T) {
	t.Parallel()
	mustFlowrun(t, "validate", "testdata/good.yaml")
}

// wantMarker is how a bad graph marks a line that must be reported:
// a trailing "# want: KEY::PATH".
var wantMarker = regexp.MustCompile(`#\s*want:\s*(\S+)\s*$`)

// wantedErrors reads the markers of a bad graph as "FILE:LINE: KEY::PATH",
// the prefix of the error each must produce.
func wantedErrors(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []string
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if m := wantMarker.FindStringSubmatch(sc.Text()); m != nil {
			want = append(want, fmt.Sprintf("%s:%d: %s: ", path, line, m[1]))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatalf("%s marks no line with # want: KEY::PATH", path)
	}
	return want
}

// errorLine is one reported problem: file:line: key::path: reason.
var errorLine = regexp.MustCompile(`^(\S+\.yaml):(\d+): ([a-z0-9_:.-]+): \S`)

// TestValidateBadGraphs runs every graph under testdata/bad: each must be
// rejected as a usage error (exit code 2 from the binary), and report every
// marked problem with its file, line and key path, each on its own line.
func TestValidateBadGraphs(t *testing.T) {
	t.Parallel()
	forEachBadGraph(t, func(t *testing.T, path string) {
		want := wantedErrors(t, path)
		r := flowrun(t, "validate", path)
		var ue usageError
		if !errors.As(r.err, &ue) {
			t.Fatalf("validate %s: error %v, want a usage error (exit code %d)\nstderr:\n%s", path, r.err, exitUsage, r.stderr)
		}
		if strings.Contains(r.stdout, "ok") {
			t.Errorf("validate printed %q for a bad graph", r.stdout)
		}
		checkReported(t, path, r.stderr, want)
	})
}

// forEachBadGraph runs test on every graph under testdata/bad, each in a
// parallel subtest named after it.
func forEachBadGraph(t *testing.T, test func(t *testing.T, path string)) {
	t.Helper()
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("only %d bad graphs under testdata/bad", len(files))
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".yaml"), func(t *testing.T) {
			t.Parallel()
			test(t, path)
		})
	}
}

// checkReported checks that stderr has each wanted error, and that every
// problem it reports about path is located (file:line: key path: reason).
func checkReported(t *testing.T, path, stderr string, want []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("no %q in:\n%s", w, stderr)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if !strings.HasPrefix(line, path) {
			continue
		}
		if !errorLine.MatchString(line) {
			t.Errorf("reported without file:line and key path: %q", line)
		}
	}
}

// TestValidateBadGraphsExitCode runs the binary on every bad graph: exit
// code 2, the located errors on stderr, and nothing on stdout.
func TestValidateBadGraphsExitCode(t *testing.T) {
	t.Parallel()
	bin := needBin(t, "flowrun")
	forEachBadGraph(t, func(t *testing.T, path string) {
		var stdout, stderr strings.Builder
		cmd := exec.Command(bin, "validate", path)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != exitUsage {
			t.Fatalf("%s: %v, want exit code %d\nstderr:\n%s", cmd, err, exitUsage, stderr.String())
		}
		if stdout.Len() != 0 {
			t.Errorf("stdout: %q, want nothing", stdout.String())
		}
		checkReported(t, path, stderr.String(), wantedErrors(t, path))
	})
}

// TestValidateReportsEveryFile gives validate good and bad graphs together:
// it checks them all, says which are fine, and fails.
func TestValidateReportsEveryFile(t *testing.T) {
	t.Parallel()
	bad := []string{"testdata/bad/cache_size.yaml", "testdata/bad/unknown_device.yaml"}
	r := flowrun(t, "validate", bad[0], "testdata/good.yaml", bad[1])
	var ue usageError
	if !errors.As(r.err, &ue) || !strings.Contains(r.err.Error(), "2 of 3 graphs invalid") {
		t.Fatalf("error %v, want a usage error counting 2 of 3 graphs invalid", r.err)
	}
	if r.stdout != "testdata/good.yaml: ok\n" {
		t.Errorf("stdout %q, want only the good graph", r.stdout)
	}
	for _, path := range bad {
		checkReported(t, path, r.stderr, wantedErrors(t, path))
	}
}

// TestValidateSetOverride checks that --set overrides are validated like the
// file, and that the error says which flag introduced the bad value.
func TestValidateSetOverride(t *testing.T) {
	t.Parallel()
	r := flowrun(t, "validate", "testdata/good.yaml", "--set", "dataset.batches=0")
	var ue usageError
	if !errors.As(r.err, &ue) {
		t.Fatalf("error %v, want a usage error", r.err)
	}
	if !strings.Contains(r.stderr, "dataset::batches") || !strings.Contains(r.stderr, "--set dataset.batches=0") {
		t.Errorf("stderr does not name the key and the flag:\n%s", r.stderr)
	}
}

// TestValidatePluginOptions checks that validate configures builtin plugins
// as a run would: options given with --set that a builtin rejects are
// reported at their key, naming the flag, as the run would fail at start.
func TestValidatePluginOptions(t *testing.T) {
	t.Parallel()
	graph := filepath.Join(repoGraphs, "tensorcasting-nmp.yaml")
	r := flowrun(t, "validate", graph, "--set", "devices.nmp.options.profile=bogus")
	var ue usageError
	if !errors.As(r.err, &ue) {
		t.Fatalf("error %v, want a usage error\nstderr:\n%s", r.err, r.stderr)
	}
	want := graph + `: devices::nmp::options::profile: device plugin "builtin:nmp-dimm": invalid plugin configuration: profile: unknown profile "bogus"`
	if !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "(from --set devices.nmp.options.profile=bogus)") {
		t.Errorf("stderr does not name the option and the flag:\n%s", r.stderr)
	}
	mustFlowrun(t, "validate", graph, "--set", "devices.nmp.options.profile=table1")
}

// TestValidateDoesNotLaunchPlugins checks that validate does not run a
// plugin binary to try its options: it checks only that the file is an
// executable, whatever its options.
func TestValidateDoesNotLaunchPlugins(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "launched")
	bin := filepath.Join(dir, "flowrun-device-tattletale")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\ntouch "+marker+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile("testdata/good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	graph := filepath.Join(dir, "graph.yaml")
	devices := "devices:\n  host:\n    plugin: builtin:cpu-dram\n  gpu:\n    plugin: " + bin + "\n    options:\n      profile: bogus\n"
	if err := os.WriteFile(graph, append(good, devices...), 0o644); err != nil {
		t.Fatal(err)
	}
	mustFlowrun(t, "validate", graph)
	if _, err := os.Stat(marker); err == nil {
		t.Error("validate ran the plugin binary")
	}
}

// TestValidateEveryErrorInOnePass: a graph with five independent problems,
// in its tree and in its stages, gets exactly five located lines from one
// validate, not the tree's first and the rest after those are fixed.
func TestValidateEveryErrorInOnePass(t *testing.T) {
	t.Parallel()
	path := "testdata/bad/five_errors.yaml"
	want := wantedErrors(t, path)
	if len(want) != 5 {
		t.Fatalf("%s marks %d problems, want 5", path, len(want))
	}
	r := flowrun(t, "validate", path)
	checkReported(t, path, r.stderr, want)
	var located int
	for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		if errorLine.MatchString(line) {
			located++
		}
	}
	if located != len(want) {
		t.Errorf("%d located errors, want %d:\n%s", located, len(want), r.stderr)
	}
}
