package main

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flowrun/framework/checkpoint"
	"github.com/flowrun/flowrun/framework/results"
)

// TestKill9ThenResume starts bin/flowrun with a checkpoint every 4
// batches, kills it with SIGKILL at a random moment after its first
// checkpoint, and resumes the run from what it left with a second
// bin/flowrun: the resumed run ends with the digest of the run never
// interrupted. Each wait is bounded (30 s for a checkpoint, 60 s a run).
func TestKill9ThenResume(t *testing.T) {
	if !integration() {
		t.Skip("starts and kills flowrun; set FLOWRUN_INTEGRATION=1")
	}
	bin := needBin(t, "flowrun")
	long := []string{
		"--set", "dataset.batches=48", "--set", "dataset.rows=40000", "--set", "dataset.batch_size=128",
		"--set", "dataset.eval_batches=4", "--set", "cache.size=0.5",
	}
	for _, c := range []ckptCase{
		{name: "scratchpipe", graph: "scratchpipe.yaml"},
		{name: "static-sequential", graph: "static-cache.yaml", sets: []string{"--set", "pipeline=sequential"}},
		{name: "tensorcasting-credits2", graph: "tensorcasting.yaml", sets: []string{"--set", "nats.credits=2"}},
		// Every plugin out of process: the model's state and the LRU
		// policy's snapshot cross gRPC.
		{name: "demo-subprocess", graph: "demo-subprocess.yaml", ref: "staged"},
	} {
		t.Run(c.name, func(t *testing.T) {
			graph := filepath.Join(repoGraphs, c.graph)
			args := append(append([]string(nil), long...), c.sets...)
			if c.ref == "staged" {
				graph = filepath.Join(stagedGraphs(t), c.graph)
				args = []string{"--set", "dataset.batches=48"}
			}
			want := runResults(t, graph, args...).Digest
			dir := t.TempDir()
			killed := killAfterCheckpoint(t, bin, graph, dir, args)
			ck, err := checkpoint.Open(dir)
			if err != nil {
				t.Fatalf("after the kill: %v", err)
			}
			t.Logf("killed %v after the first checkpoint; resuming from batch %d", killed, ck.Batch)
			out := filepath.Join(t.TempDir(), "results.json")
			cmd := exec.Command(bin, append([]string{"run", graph, "-q", "--resume", dir, "--out", out}, args...)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := runWithin(cmd, 60*time.Second); err != nil {
				t.Fatalf("resume: %v\n%s", err, stderr.String())
			}
			res, err := results.Read(out)
			if err != nil {
				t.Fatal(err)
			}
			if res.Digest != want {
				t.Fatalf("resumed from batch %d: digest %s, uninterrupted %s", ck.Batch, res.Digest, want)
			}
		})
	}
}

// killAfterCheckpoint runs bin until its first checkpoint is under dir,
// waits a random 0–400 ms more (a random batch), kills it with SIGKILL
// and returns how long after the checkpoint it did.
func killAfterCheckpoint(t *testing.T, bin, graph, dir string, args []string) time.Duration {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"run", graph, "-q", "--checkpoint-every", "4", "--checkpoint-dir", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer func() { cmd.Process.Kill(); <-exited }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, checkpoint.Name(4))); err == nil {
			break
		}
		select {
		case <-exited:
			t.Fatalf("flowrun ended before its first checkpoint:\n%s", stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint in 30 s:\n%s", stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	wait := time.Duration(rand.IntN(400)) * time.Millisecond
	time.Sleep(wait)
	// A run that finished in the wait is not killed; resuming from its
	// newest checkpoint must still end with the digest.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	<-exited
	return wait
}

// runWithin runs cmd, killing it after d.
func runWithin(cmd *exec.Cmd, d time.Duration) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	timer := time.AfterFunc(d, func() { cmd.Process.Kill() })
	defer timer.Stop()
	return cmd.Wait()
}
