package main

import (
	"bytes"
	"errors"
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
// which names the worker, soon (its heartbeat stops: placement.Silence)
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
