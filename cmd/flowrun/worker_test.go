package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/flowrun/flowrun/framework/results"
)

// natsForWorkers starts a NATS server in this process that admits any
// client, as an external server does: the run and its workers connect
// to it by URL.
func natsForWorkers(t testing.TB) string {
	t.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(srv.Shutdown)
	return srv.ClientURL()
}

// placedRun runs graph with sets on a NATS server with its placement's
// workers (each `flowrun worker --name W`) in this process, and returns
// the run's results and each worker's outcome.
func placedRun(t testing.TB, graph string, workers []string, sets ...string) (*results.Results, map[string]cliResult) {
	t.Helper()
	url := natsForWorkers(t)
	var args []string
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	out := filepath.Join(t.TempDir(), "results.json")
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[string]cliResult{}
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := flowrun(t, append([]string{"worker", "--nats", url, "--graph", graph, "--name", w, "-q", "--wait", "60s"}, args...)...)
			mu.Lock()
			got[w] = r
			mu.Unlock()
		}()
	}
	run := flowrun(t, append([]string{"run", graph, "-q", "--nats", url, "--out", out}, args...)...)
	wg.Wait()
	if run.err != nil {
		t.Fatalf("placed run: %v\n%s\nworkers: %v", run.err, run.stderr, got)
	}
	res, err := results.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	return res, got
}

// TestWorkerPlacedStagesSameDigest: demo and scratchpipe with plan and
// exchange on a worker (pipelined and sequential) end with the digest and
// the modeled figures of the single process.
func TestWorkerPlacedStagesSameDigest(t *testing.T) {
	cases := []struct {
		graph, digest string
		modeled       float64
		sets          []string
	}{
		{"demo.yaml", "cf6e49bdf557", 0.29667289361702126, nil},
		{"demo.yaml", "", 0, []string{"pipeline=sequential"}},
		{"scratchpipe.yaml", "6ca51a793942", 13.950656837209303, nil},
		{"scratchpipe.yaml", "", 0, []string{"dataset.batches=60", "pipeline=sequential"}},
		// A host label other than the run's: arrays cross by value.
		{"demo.yaml", "cf6e49bdf557", 0.29667289361702126, []string{"placement.workers.w1.host=far"}},
		{"demo.yaml", "", 0, []string{"placement.workers.w1.host=far", "pipeline=sequential"}},
		{"scratchpipe.yaml", "", 0, []string{"placement.workers.w1.host=far", "dataset.batches=60"}},
	}
	for _, c := range cases {
		name := strings.TrimSuffix(c.graph, ".yaml") + "/" + strings.Join(c.sets, ",")
		t.Run(name, func(t *testing.T) {
			graph := filepath.Join(repoGraphs, c.graph)
			var want *results.Results
			var ref []string // the sets of the single-process run
			for _, s := range c.sets {
				if !strings.HasPrefix(s, "placement.") {
					ref = append(ref, s)
				}
			}
			if len(ref) > 0 || c.digest == "" {
				want = runResults(t, graph, setArgs(ref)...)
			}
			sets := append([]string{"placement.workers.w1.stages=[plan,exchange]"}, c.sets...)
			got, workers := placedRun(t, graph, []string{"w1"}, sets...)
			if w := workers["w1"]; w.err != nil {
				t.Fatalf("worker: %v\n%s", w.err, w.stderr)
			}
			if want != nil {
				if got.Digest != want.Digest {
					t.Errorf("digest %s placed, %s in one process", got.Digest, want.Digest)
				}
				if got.IterationMs.Modeled != want.IterationMs.Modeled {
					t.Errorf("modeled iteration %v placed, %v in one process", got.IterationMs.Modeled, want.IterationMs.Modeled)
				}
			}
			if c.digest != "" && !strings.HasPrefix(got.Digest, c.digest) {
				t.Errorf("digest %s, want %s…", got.Digest, c.digest)
			}
			if c.modeled != 0 && got.IterationMs.Modeled != c.modeled {
				t.Errorf("modeled iteration %v, want %v", got.IterationMs.Modeled, c.modeled)
			}
			for _, s := range got.Stages {
				if s.Batches == 0 {
					t.Errorf("stage %s reports no batches", s.Name)
				}
			}
			checkEdges(t, got, strings.Contains(strings.Join(c.sets, " "), "host=far"))
		})
	}
}

// TestWorkerRefused: a worker given another graph (another seed) is
// refused by the run's digest; a placed stage whose kind needs the run's
// host tables fails the run, naming the worker and what it lacks.
func TestWorkerRefused(t *testing.T) {
	graph := filepath.Join(repoGraphs, "demo.yaml")
	url := natsForWorkers(t)
	place := "placement.workers.w1.stages=[plan]"
	done := make(chan cliResult, 1)
	go func() {
		done <- flowrun(t, "run", graph, "-q", "--nats", url, "--run-id", "refusal", "--set", place, "--set", "placement.wait=3s")
	}()
	w := flowrun(t, "worker", "--nats", url, "--graph", graph, "--run", "refusal", "--name", "w1", "-q", "--set", place, "--set", "placement.wait=3s", "--set", "seed=2")
	if w.err == nil || !strings.Contains(w.err.Error(), "holds another graph") {
		t.Errorf("worker with another seed: %v, want a refusal naming the graph digest", w.err)
	}
	run := <-done
	if run.err == nil || !strings.Contains(run.err.Error(), "no worker joined") || !strings.Contains(run.err.Error(), "--name w1") {
		t.Errorf("run without its worker: %v, want the timeout naming the worker's command", run.err)
	}

	sp := filepath.Join(repoGraphs, "scratchpipe.yaml")
	_, workers := func() (*results.Results, map[string]cliResult) {
		out := filepath.Join(t.TempDir(), "r.json")
		sets := []string{"--set", "placement.workers.w1.stages=[collect]", "--set", "dataset.batches=4"}
		ch := make(chan cliResult, 1)
		go func() {
			ch <- flowrun(t, append([]string{"worker", "--nats", url, "--graph", sp, "--name", "w1", "-q"}, sets...)...)
		}()
		r := flowrun(t, append([]string{"run", sp, "-q", "--nats", url, "--out", out}, sets...)...)
		if r.err == nil || !strings.Contains(r.err.Error(), "worker w1") || !strings.Contains(r.err.Error(), "needs the host tables") {
			t.Errorf("collect on a worker: %v, want the run to fail naming w1 and the host tables", r.err)
		}
		if _, err := os.Stat(out); err == nil {
			t.Error("the failed run wrote a results file")
		}
		return nil, map[string]cliResult{"w1": <-ch}
	}()
	if workers["w1"].err == nil {
		t.Error("the worker that could not build its stage exited 0")
	}
}

// checkEdges checks the results' placement: the edges between the run
// and the worker, by value or not as asked, and by value every batch's
// arrays counted.
func checkEdges(t *testing.T, res *results.Results, byValue bool) {
	t.Helper()
	p := res.Placement
	if p == nil || len(p.Workers) != 1 || len(p.Edges) < 2 {
		t.Fatalf("results' placement: %+v, want one worker and the edges to and from it", p)
	}
	for _, e := range p.Edges {
		if e.ByValue != byValue {
			t.Errorf("edge %s (%s → %s): by value %v, want %v", e.Subject, e.From, e.To, e.ByValue, byValue)
		}
		if byValue && (e.Batches != int64(res.Batches+res.EvalBatches) || e.Bytes == 0 || e.Messages < e.Batches) {
			t.Errorf("edge %s by value: %d batches, %d bytes, %d messages; want every batch's arrays", e.Subject, e.Batches, e.Bytes, e.Messages)
		}
		if byValue {
			t.Logf("edge %s (%s → %s): %d B, %.1f messages per batch, %.3f ms per batch sending",
				e.Subject, e.From, e.To, e.Bytes/e.Batches, float64(e.Messages)/float64(e.Batches), e.SendMs/float64(e.Batches))
		}
	}
}

func setArgs(sets []string) []string {
	var args []string
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	return args
}

// TestWorkerVanishes: a worker that stops mid-run without a word (its
// heartbeat stops, as when it is killed: TestWorkerKilled kills a
// process) fails the run, naming it, and no results file is written.
func TestWorkerVanishes(t *testing.T) {
	graph := filepath.Join(repoGraphs, "demo.yaml")
	url := natsForWorkers(t)
	sets := []string{"placement.workers.w1.stages=[plan,exchange]", "dataset.batches=100000"}
	out := filepath.Join(t.TempDir(), "r.json")
	ctx, vanish := context.WithCancel(context.Background())
	defer vanish()
	stderr := &syncBuffer{}
	go func() {
		_ = runWorker(ctx, workerFlags{graph: graph, sets: sets, nats: url, name: "w1", wait: time.Minute}, stderr)
	}()
	go func() {
		for !strings.Contains(stderr.String(), "joined run") {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond) // batches flow through the worker
		vanish()
	}()
	run := flowrun(t, append([]string{"run", graph, "-q", "--nats", url, "--out", out}, setArgs(sets)...)...)
	if run.err == nil || !strings.Contains(run.err.Error(), "worker w1") || !strings.Contains(run.err.Error(), "stopped answering") {
		t.Errorf("run whose worker vanished: %v, want an error naming w1's silence", run.err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("the failed run wrote a results file")
	}
}
