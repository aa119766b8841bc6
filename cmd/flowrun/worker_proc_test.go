package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flowrun/framework/results"
)

// syncBuffer is a bytes.Buffer a process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startWorkerProc starts bin/flowrun worker with args; its stderr is
// returned for the test to read while it runs.
func startWorkerProc(t *testing.T, args ...string) (*exec.Cmd, *syncBuffer, chan error) {
	t.Helper()
	var stderr syncBuffer
	cmd := exec.Command(needBin(t, "flowrun"), append([]string{"worker"}, args...)...)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, &stderr, exited
}

// TestWorkerProcesses: the run and its worker as separate processes on
// a nats-server: demo with plan and exchange on the worker, on the
// run's host (zero-copy) and on a host of another label (by value), ends
// with the single process's digest; the worker leaves when the run ends.
func TestWorkerProcesses(t *testing.T) {
	if !integration() {
		t.Skip("FLOWRUN_INTEGRATION=1 runs flowrun worker as a process")
	}
	url := startNATS(t, needBin(t, "nats-server")).url()
	for _, host := range []string{"", "far"} {
		sets := []string{"--set", "placement.workers.w1.stages=[plan,exchange]"}
		if host != "" {
			sets = append(sets, "--set", "placement.workers.w1.host="+host)
		}
		out := filepath.Join(t.TempDir(), "r.json")
		_, wstderr, wexit := startWorkerProc(t, append([]string{"--nats", url, "--graph", demo, "--name", "w1"}, sets...)...)
		_, stderr, exited := startFlowrun(t, append([]string{"run", demo, "-q", "--nats", url, "--out", out}, sets...)...)
		if err := waitExit(t, exited, 120*time.Second); err != nil {
			t.Fatalf("placed run (host %q): %v\n%s\nworker:\n%s", host, err, stderr, wstderr)
		}
		if err := waitExit(t, wexit, 30*time.Second); err != nil {
			t.Errorf("worker (host %q) after the run: %v\n%s", host, err, wstderr)
		}
		res, err := results.Read(out)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(res.Digest, "cf6e49bdf557") {
			t.Errorf("host %q: digest %s, want cf6e49bdf557…", host, res.Digest)
		}
		checkEdges(t, res, host != "")
	}
}

// TestWorkerKilled: a worker killed with SIGKILL mid-run fails the run,
// which names the worker, soon (its heartbeat stops: placement.silence)
// and writes no results file.
func TestWorkerKilled(t *testing.T) {
	if !integration() {
		t.Skip("FLOWRUN_INTEGRATION=1 kills a flowrun worker process")
	}
	url := startNATS(t, needBin(t, "nats-server")).url()
	sets := []string{"--set", "placement.workers.w1.stages=[plan,exchange]", "--set", "dataset.batches=100000"}
	out := filepath.Join(t.TempDir(), "r.json")
	worker, wstderr, wexit := startWorkerProc(t, append([]string{"--nats", url, "--graph", demo, "--name", "w1"}, sets...)...)
	_, stderr, exited := startFlowrun(t, append([]string{"run", demo, "-q", "--nats", url, "--out", out}, sets...)...)
	whileRunning(t, exited, "the worker joined", func() bool { return strings.Contains(wstderr.String(), "joined run") })
	time.Sleep(time.Second) // mid-run: batches flow through the worker
	select {
	case err := <-wexit:
		t.Fatalf("the worker ended (%v) before it was killed:\n%s", err, wstderr)
	default:
	}
	if err := worker.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	err := waitExit(t, exited, 30*time.Second)
	t.Logf("the run ended %v after the worker's SIGKILL", time.Since(killed).Round(time.Millisecond))
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("run with its worker killed: %v, want exit 1\n%s", err, stderr)
	}
	for _, want := range []string{"worker w1", "stopped answering"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("the run's error does not say %q:\n%s", want, stderr)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("the failed run wrote a results file")
	}
}

// startCluster starts three nats-server nodes on loopback with routes
// between every pair and returns their client URLs once routed.
func startCluster(t *testing.T) []string {
	t.Helper()
	bin := needBin(t, "nats-server")
	routes := []int{freeTCPPort(t), freeTCPPort(t), freeTCPPort(t)}
	var all []string
	for _, r := range routes {
		all = append(all, fmt.Sprintf("nats://127.0.0.1:%d", r))
	}
	var urls []string
	var monitors []int
	for i, r := range routes {
		m := freeTCPPort(t)
		n := startNATS(t, bin, "-m", fmt.Sprint(m), "--cluster_name", "flowrun-workers", "--name", fmt.Sprintf("n%d", i),
			"--cluster", fmt.Sprintf("nats://127.0.0.1:%d", r), "--routes", strings.Join(all, ","))
		urls, monitors = append(urls, n.url()), append(monitors, m)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, m := range monitors {
		for varz(m, "routes") < 2 {
			if time.Now().After(deadline) {
				t.Fatalf("cluster not routed after 30 s")
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return urls
}

// TestWorkersOnCluster: the run and two worker processes each connected
// to a different node of a 3-node cluster (plan on w1, exchange on w2),
// for two seeds, pipelined and sequential, shared memory and by value:
// the digest of the single process every time.
func TestWorkersOnCluster(t *testing.T) {
	if !integration() {
		t.Skip("FLOWRUN_INTEGRATION=1 runs workers on a 3-node NATS cluster")
	}
	urls := startCluster(t)
	for _, c := range []struct{ seed, pipeline, hosts string }{
		{"1", "pipelined", ""}, {"7", "pipelined", ""}, {"7", "sequential", ""}, {"1", "pipelined", "far"},
	} {
		common := []string{"seed=" + c.seed, "pipeline=" + c.pipeline}
		want := runResults(t, demo, setArgs(common)...)
		sets := append([]string{"placement.workers.w1.stages=[plan]", "placement.workers.w2.stages=[exchange]"}, common...)
		if c.hosts != "" {
			sets = append(sets, "placement.workers.w1.host=far1", "placement.workers.w2.host=far2")
		}
		args := setArgs(sets)
		var wexits []chan error
		var wlogs []*syncBuffer
		for i, w := range []string{"w1", "w2"} {
			_, log, exit := startWorkerProc(t, append([]string{"--nats", urls[i+1], "--graph", demo, "--name", w}, args...)...)
			wexits, wlogs = append(wexits, exit), append(wlogs, log)
		}
		out := filepath.Join(t.TempDir(), "r.json")
		_, stderr, exited := startFlowrun(t, append([]string{"run", demo, "-q", "--nats", urls[0], "--out", out}, args...)...)
		if err := waitExit(t, exited, 120*time.Second); err != nil {
			t.Fatalf("%+v: %v\n%s\nw1: %s\nw2: %s", c, err, stderr, wlogs[0], wlogs[1])
		}
		for i, e := range wexits {
			if err := waitExit(t, e, 30*time.Second); err != nil {
				t.Errorf("%+v: worker w%d: %v\n%s", c, i+1, err, wlogs[i])
			}
		}
		got, err := results.Read(out)
		if err != nil {
			t.Fatal(err)
		}
		if got.Digest != want.Digest || got.IterationMs.Modeled != want.IterationMs.Modeled {
			t.Errorf("%+v: digest %s, modeled %v; one process: %s, %v", c, got.Digest, got.IterationMs.Modeled, want.Digest, want.IterationMs.Modeled)
		}
		if got.Placement == nil || len(got.Placement.Edges) != 3 {
			t.Errorf("%+v: placement %+v, want 3 edges (load → plan → exchange → train)", c, got.Placement)
		}
	}
}

// TestRunKilledWorkerLeaves: a run killed with SIGKILL mid-run leaves
// its worker without a heartbeat; the worker exits 1 saying so
// (placement.RunSilence) instead of waiting for ever.
func TestRunKilledWorkerLeaves(t *testing.T) {
	if !integration() {
		t.Skip("FLOWRUN_INTEGRATION=1 kills a flowrun run process")
	}
	url := startNATS(t, needBin(t, "nats-server")).url()
	sets := []string{"--set", "placement.workers.w1.stages=[plan,exchange]", "--set", "dataset.batches=100000"}
	_, wstderr, wexit := startWorkerProc(t, append([]string{"--nats", url, "--graph", demo, "--name", "w1"}, sets...)...)
	run, _, exited := startFlowrun(t, append([]string{"run", demo, "-q", "--nats", url}, sets...)...)
	whileRunning(t, exited, "the worker joined", func() bool { return strings.Contains(wstderr.String(), "joined run") })
	time.Sleep(500 * time.Millisecond)
	if err := run.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := waitExit(t, wexit, 30*time.Second)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(wstderr.String(), "the run stopped answering") {
		t.Errorf("worker of a killed run: %v, want exit 1 saying the run stopped answering\n%s", err, wstderr)
	}
}
