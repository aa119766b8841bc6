package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flowrun/framework/results"
)

// noCacheDigest is the dlrm graphs' digest at their defaults.
const noCacheDigest = "6ca51a793942"

// TestShardedDigest: sharding the host tables 1, 2 or 3 ways changes no
// value: the no-cache and ScratchPipe graphs, pipelined and sequential,
// end with the unsharded no-cache digest of the same seed. Short runs for
// seeds other than the default; the default graph in full once.
func TestShardedDigest(t *testing.T) {
	t.Parallel()
	noCache := filepath.Join(repoGraphs, "no-cache.yaml")
	sp := filepath.Join(repoGraphs, "scratchpipe.yaml")
	if d := runResults(t, sp, "--set", "shards.count=3").Digest; !strings.HasPrefix(d, noCacheDigest) {
		t.Errorf("scratchpipe, 3 shards: digest %s, want %s…", d, noCacheDigest)
	}
	short := []string{"--set", "dataset.batches=24", "--set", "dataset.eval_batches=2"}
	for _, seed := range []string{"2", "5"} {
		args := append([]string{"--set", "seed=" + seed}, short...)
		want := runResults(t, noCache, args...).Digest
		for _, g := range []string{noCache, sp} {
			for _, pipe := range []string{"pipelined", "sequential"} {
				for _, n := range []int{1, 2, 3} {
					a := append([]string{"--set", "pipeline=" + pipe, "--set", fmt.Sprintf("shards.count=%d", n)}, args...)
					if got := runResults(t, g, a...).Digest; got != want {
						t.Errorf("%s %s seed %s, %d shards: digest %.12s, unsharded no-cache %.12s", filepath.Base(g), pipe, seed, n, got, want)
					}
				}
			}
		}
	}
}

// TestShardedTablesRefused: what sharded tables cannot hold is refused
// before the run, naming the key.
func TestShardedTablesRefused(t *testing.T) {
	t.Parallel()
	g := filepath.Join(repoGraphs, "no-cache.yaml")
	for set, want := range map[string]string{
		"shards.count=0":           "shards::count",
		"embedding.precision=fp16": "sharded tables are FP32",
		"shards.link=nowhere":      `shards::link: no device "nowhere"`,
		"shards.timeout_ms=-1":     "shards::timeout_ms",
	} {
		r := flowrun(t, "run", g, "-q", "--set", "shards.count=2", "--set", set)
		if r.err == nil || !strings.Contains(r.err.Error()+r.stderr, want) {
			t.Errorf("--set %s: error %v, want one naming %q", set, r.err, want)
		}
	}
}

// TestKilledShardFailsRun kills one of three `flowrun shard` processes
// mid-run: the run fails within a second naming the shard, and writes no
// results file.
func TestKilledShardFailsRun(t *testing.T) {
	t.Parallel()
	bins := needBins(t, "flowrun", "nats-server")
	url := startNATSServer(t, bins[1])
	var procs []*exec.Cmd
	for i := range 3 {
		cmd := exec.Command(bins[0], "shard", "--nats", url, "--index", fmt.Sprint(i), "--of", "3")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	out := filepath.Join(t.TempDir(), "results.json")
	run := exec.Command(bins[0], "run", filepath.Join(repoGraphs, "no-cache.yaml"), "-q", "--nats", url,
		"--set", "shards.count=3", "--set", "dataset.batches=100000", "--out", out)
	var stderr strings.Builder
	run.Stderr = &stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- run.Wait() }()
	time.Sleep(3 * time.Second) // well into the run
	killed := time.Now()
	if err := procs[1].Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err == nil {
			t.Fatal("the run succeeded with a shard killed")
		}
		// The detection takes ≈ 50 ms here (docs/scale-out.md); the bound
		// is a hang guard that a loaded machine cannot trip, well below
		// the 30 s a request waits for a shard that is there.
		d := time.Since(killed)
		t.Logf("the run failed %v after the kill", d)
		if d > 10*time.Second {
			t.Errorf("the run failed %v after the kill: the death was not detected, only timed out", d)
		}
	case <-time.After(30 * time.Second):
		run.Process.Kill()
		t.Fatal("the run did not fail within 30 s of a shard's death")
	}
	if !strings.Contains(stderr.String(), "table shard 1 of 3") {
		t.Errorf("the error does not name shard 1:\n%s", stderr.String())
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a results file was written")
	}
}

// TestShardLinkCharged: with shards.link the load stage charges the rows
// that crossed to and from the shards on the network device (modeled),
// 100 GbE less than 25 GbE, and the digest does not change.
func TestShardLinkCharged(t *testing.T) {
	t.Parallel()
	g := filepath.Join(repoGraphs, "no-cache.yaml")
	args := []string{"--set", "dataset.batches=12", "--set", "dataset.eval_batches=0", "--set", "shards.count=2",
		"--set", "devices.net.plugin=builtin:network"}
	plain := runResults(t, g, args...)
	loadMs := func(r *results.Results) float64 {
		for _, s := range r.Stages {
			if s.Name == "load" && s.ModeledMs != nil {
				return s.ModeledMs.Mean
			} else if s.Name == "load" {
				return 0
			}
		}
		t.Fatal("no load stage in the results")
		return 0
	}
	if ms := loadMs(plain); ms != 0 {
		t.Errorf("load without shards.link: %v modeled ms, want 0", ms)
	}
	slow := runResults(t, g, append(args, "--set", "shards.link=net")...)
	fast := runResults(t, g, append(args, "--set", "shards.link=net", "--set", "devices.net.options.profile=100gbe")...)
	if s, f := loadMs(slow), loadMs(fast); !(s > f && f > 0) {
		t.Errorf("load's modeled ms: 25 GbE %v, 100 GbE %v: want 25 GbE > 100 GbE > 0", s, f)
	}
	if slow.Digest != plain.Digest || fast.Digest != plain.Digest {
		t.Errorf("digests %.12s, %.12s with the link, %.12s without", slow.Digest, fast.Digest, plain.Digest)
	}
}
