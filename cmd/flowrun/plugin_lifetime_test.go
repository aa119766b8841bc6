package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/sdk/region"
)

// TestKill9LeavesNoPlugin kills flowrun with SIGKILL in the middle of a
// run whose every plugin is out of process: each plugin exits within two
// seconds, and the next flowrun to start removes every region the dead
// run and its plugins left.
func TestKill9LeavesNoPlugin(t *testing.T) {
	if !integration() {
		t.Skip("starts flowrun and its plugins; set FLOWRUN_INTEGRATION=1")
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs procfs to find the plugins")
	}
	flowrunBin := needBin(t, "flowrun")
	graph := filepath.Join(stagedGraphs(t), "demo-subprocess.yaml")
	spans := filepath.Join(t.TempDir(), "spans.jsonl")
	cmd := exec.Command(flowrunBin, "run", graph, "-q", "--set", "dataset.batches=100000", "--trace", "file:"+spans)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })

	deadline := time.Now().Add(60 * time.Second)
	for trainedBatches(spans) < 5 {
		select {
		case <-exited:
			t.Fatalf("flowrun ended before the kill:\n%s", stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no 5 batches trained in 60 s:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	plugins := children(t, cmd.Process.Pid)
	if len(plugins) < 5 {
		t.Fatalf("flowrun runs %d plugin processes %v, want model, kernel, cache and 2 devices", len(plugins), plugins)
	}
	owners := append([]int{cmd.Process.Pid}, plugins...)
	if len(regionsOf(t, owners)) == 0 {
		t.Fatal("the run has no shared-memory region")
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	killed := time.Now()
	for _, pid := range plugins {
		for !processGone(pid) {
			if time.Since(killed) > 2*time.Second {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("plugin %d still runs 2 s after flowrun was killed", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("every plugin gone %v after the kill", time.Since(killed))

	// The next flowrun to start sweeps (any command with a plugin host).
	mustFlowrun(t, "validate", demo)
	if left := regionsOf(t, owners); len(left) > 0 {
		t.Errorf("regions left after the next start: %v", left)
	}
}

// children lists the pids whose parent is parent.
func children(t *testing.T, parent int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, stat := range stats {
		data, err := os.ReadFile(stat)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(data, ')')
		if i < 0 {
			continue
		}
		if f := strings.Fields(string(data[i+1:])); len(f) > 1 && f[1] == strconv.Itoa(parent) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(stat)))
			out = append(out, pid)
		}
	}
	return out
}

// processGone: no such process, or a zombie (that a container's init may
// never reap).
func processGone(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(data, ')')
	return i > 0 && i+2 < len(data) && (data[i+2] == 'Z' || data[i+2] == 'X')
}

// regionsOf lists the regions in region.Dir() created by one of pids.
func regionsOf(t *testing.T, pids []int) []string {
	t.Helper()
	entries, err := os.ReadDir(region.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		for _, pid := range pids {
			p := region.Prefix + strconv.Itoa(pid)
			if strings.HasPrefix(e.Name(), p+"-") || strings.HasPrefix(e.Name(), p+".") {
				out = append(out, e.Name())
			}
		}
	}
	return out
}

// TestNotAPluginOneLine names /bin/true as the model and as the cache: one
// line naming the key, not go-plugin's advice. The cache is opened while
// the graph is validated, so it is a usage error (exit 2); the model is
// refused with a *pluginhost.RefusedError, opened when the run starts.
func TestNotAPluginOneLine(t *testing.T) {
	if !integration() {
		t.Skip("starts /bin/true as a plugin; set FLOWRUN_INTEGRATION=1")
	}
	path, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true(1)")
	}
	for _, key := range []string{"cache", "model"} {
		r := flowrun(t, "run", demo, "-q", "--set", key+".plugin="+path)
		var refused *pluginhost.RefusedError
		msg := fmt.Sprint(r.err)
		switch {
		case !errors.As(r.err, &refused) || !errors.Is(r.err, pluginhost.ErrNotPlugin):
			t.Errorf("%s: %v, want a *pluginhost.RefusedError (ErrNotPlugin)", key, r.err)
		case strings.Contains(msg, "\n") || !strings.Contains(msg, key+"::plugin: ") || strings.Contains(r.stderr, "Unrecognized remote plugin"):
			t.Errorf("%s: error %q, want one line at %s::plugin\nstderr:\n%s", key, msg, key, r.stderr)
		}
		if key == "cache" && exitCode(r.err) != exitUsage {
			t.Errorf("cache: exit code %d, want %d", exitCode(r.err), exitUsage)
		}
	}
}

// TestPinMismatchNeverRuns pins a plugin script that would create a file
// to another sum: the graph is refused (exit 2, at the key) and the
// script never runs.
func TestPinMismatchNeverRuns(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	script := filepath.Join(dir, "cache-plugin")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	graph := filepath.Join(dir, "pinned.yaml")
	writeGraph(t, graph, demo, map[string]string{
		"  plugin: builtin:lru\n": "  plugin: ./cache-plugin\n  sha256: \"" + strings.Repeat("0", 64) + "\"\n",
	})
	r := flowrun(t, "validate", graph)
	if exitCode(r.err) != exitUsage || !regexp.MustCompile(`pinned.yaml:\d+: cache::plugin: `).MatchString(r.stderr) || !strings.Contains(r.stderr, "sha256 differs from the pin") {
		t.Errorf("validate: %v (exit %d), want a pin mismatch at pinned.yaml:LINE: cache::plugin, exit %d\nstderr:\n%s", r.err, exitCode(r.err), exitUsage, r.stderr)
	}
	r = flowrun(t, "run", graph, "-q")
	if !errors.Is(r.err, pluginhost.ErrPinMismatch) || exitCode(r.err) != exitUsage || !strings.Contains(r.err.Error(), "cache::plugin") {
		t.Errorf("run: %v (exit %d), want a pin mismatch at cache::plugin, exit %d", r.err, exitCode(r.err), exitUsage)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the mispinned plugin ran")
	}
}

// TestPluginsLock pins the out-of-process demo: every binary gets its
// sha256 beside its plugin key, nothing else in the file changes, the
// graph still validates, and a wrong pin then refuses it at its key.
func TestPluginsLock(t *testing.T) {
	graphs := stagedGraphs(t)
	graph := filepath.Join(graphs, "demo-subprocess.yaml")
	before, err := os.ReadFile(graph)
	if err != nil {
		t.Fatal(err)
	}
	dry := mustFlowrun(t, "plugins", "lock", "--dry-run", graph)
	if n := strings.Count(dry.stdout, "--set "); n != 5 {
		t.Errorf("--dry-run printed %d pins, want 5:\n%s", n, dry.stdout)
	}
	if after, _ := os.ReadFile(graph); !bytes.Equal(after, before) {
		t.Error("--dry-run changed the graph")
	}
	mustFlowrun(t, "plugins", "lock", graph)
	after, err := os.ReadFile(graph)
	if err != nil {
		t.Fatal(err)
	}
	var added []string
	a, b := strings.Split(string(before), "\n"), strings.Split(string(after), "\n")
	for i, j := 0, 0; j < len(b); j++ {
		if i < len(a) && a[i] == b[j] {
			i++
			continue
		}
		added = append(added, strings.TrimSpace(b[j]))
	}
	if len(added) != 5 || len(b) != len(a)+5 {
		t.Fatalf("lock changed %v, want 5 sha256 lines added and nothing else", added)
	}
	for _, l := range added {
		if !strings.HasPrefix(l, `sha256: "`) {
			t.Errorf("lock added %q", l)
		}
	}
	mustFlowrun(t, "validate", graph)
	// Locking again rewrites the same pins in place.
	mustFlowrun(t, "plugins", "lock", graph)
	if again, _ := os.ReadFile(graph); !bytes.Equal(again, after) {
		t.Error("a second lock changed the file")
	}
	wrong := strings.Replace(string(after), strings.Trim(added[2][len("sha256: "):], `"`), strings.Repeat("0", 64), 1)
	if err := os.WriteFile(graph, []byte(wrong), 0o644); err != nil {
		t.Fatal(err)
	}
	r := flowrun(t, "validate", graph)
	if exitCode(r.err) != exitUsage || !strings.Contains(r.stderr, "devices::host::plugin: ") || !strings.Contains(r.stderr, "sha256 differs from the pin") {
		t.Errorf("validate with a wrong pin: %v, want exit %d naming devices::host::plugin\nstderr:\n%s", r.err, exitUsage, r.stderr)
	}
}

// TestWritePins edits a graph's text: a block mapping gets a line, a flow
// one a key, an old pin (malformed or not) its new value; comments stay.
func TestWritePins(t *testing.T) {
	in := "model:\n  plugin: './m' # the model\n  sha256: old\n" +
		"devices:\n  host: {plugin: ./h}   # flow\n" +
		"cache:\n    plugin: ./c\n    size: 0.05\n"
	pin := func(c byte) string { return strings.Repeat(string(c), 64) }
	out, err := writePins([]byte(in), []pluginBinary{
		{keys: []string{"model"}, pin: pin('a')},
		{keys: []string{"devices", "host"}, pin: pin('b')},
		{keys: []string{"cache"}, pin: pin('c')},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "model:\n  plugin: './m' # the model\n  sha256: \"" + pin('a') + "\"\n" +
		"devices:\n  host: {plugin: ./h, sha256: \"" + pin('b') + "\"}   # flow\n" +
		"cache:\n    plugin: ./c\n    sha256: \"" + pin('c') + "\"\n    size: 0.05\n"
	if string(out) != want {
		t.Errorf("writePins:\n%s\nwant:\n%s", out, want)
	}
	if clear := clearPins([]byte(in)); len(clear) != 1 || clear[0] != "model.sha256=" {
		t.Errorf("clearPins = %q, want [model.sha256=]", clear)
	}
}
