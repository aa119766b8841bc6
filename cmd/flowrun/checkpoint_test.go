package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/checkpoint"
	"github.com/flowrun/flowrun/framework/results"
)

// small is the dataset every checkpoint test runs: a second or less a run.
var small = []string{
	"--set", "dataset.batches=20", "--set", "dataset.rows=40000", "--set", "dataset.batch_size=128",
	"--set", "dataset.eval_batches=4", "--set", "cache.size=0.5",
}

// ckptCase is a graph and the overrides that make one of its variants.
type ckptCase struct {
	name, graph string
	sets        []string
	// ref is the graph whose uninterrupted run gives the digest: an exact
	// design ends with its no-cache graph's.
	ref string
	// cold: the policy takes no snapshot and restarts empty, so only the
	// digest, not the hits, matches the run never interrupted.
	cold bool
}

func ckptCases() []ckptCase {
	credits2 := []string{"--set", "nats.credits=2", "--set", "stages.plan.past_window=9", "--set", "stages.plan.future_window=6"}
	seq := []string{"--set", "pipeline=sequential"}
	lru := []string{"--set", "cache.plugin=builtin:lru", "--set", "cache.options=null"}
	belady := []string{"--set", "cache.plugin=builtin:belady", "--set", "cache.options=null"}
	const dlrm, tc = "no-cache.yaml", "tensorcasting.yaml"
	return []ckptCase{
		{"scratchpipe", "scratchpipe.yaml", nil, dlrm, false},
		{"scratchpipe-credits2", "scratchpipe.yaml", credits2, dlrm, false},
		{"scratchpipe-sequential", "scratchpipe.yaml", seq, dlrm, false},
		{"static", "static-cache.yaml", nil, dlrm, false},
		{"static-credits2", "static-cache.yaml", credits2, dlrm, false},
		{"static-sequential", "static-cache.yaml", seq, dlrm, false},
		// LRU and Belady hold no window: sequential graphs only.
		{"lru-sequential", "strawman.yaml", lru, dlrm, false},
		{"belady-sequential", "strawman.yaml", belady, dlrm, false},
		{"lfu-sequential", "strawman.yaml", []string{"--set", "cache.plugin=builtin:lfu", "--set", "cache.options=null"}, dlrm, false},
		{"scratchpipe-random-victims", "strawman.yaml", []string{"--set", "cache.options.victim=random"}, dlrm, true},
		// heca.yaml is exact too; its reference here is itself, uninterrupted.
		{"heca", "heca.yaml", nil, "heca.yaml", false},
		{"heca-pipelined", "heca-pipelined.yaml", nil, dlrm, false},
		// Bounded staleness keeps the previous batch's rows across a
		// boundary (train's and the stale stage's window); train's
		// pipelined ends with the stale stage's digest.
		{"heca-stale-pipelined", "heca-stale-pipelined.yaml", nil, "heca-stale.yaml", false},
		{"heca-stale", "heca-stale.yaml", nil, "heca-stale.yaml", false},
		// Inference: the filter stage's NDCG sums are stage state.
		{"inference", "demo-inference.yaml", nil, "demo-inference.yaml", false},
		{"tensorcasting", tc, nil, tc, false},
		{"tensorcasting-credits2", tc, []string{"--set", "nats.credits=2"}, tc, false},
		{"tensorcasting-sequential", tc, seq, tc, false},
		// Low-precision host tables (packed rows, their FP32 state, and
		// whether a row was written yet) are inexact: their reference is
		// the same graph uninterrupted.
		{"int8-stochastic", "scratchpipe.yaml", []string{"--set", "embedding.precision=int8", "--set", "embedding.rounding=stochastic"}, "scratchpipe.yaml", false},
		{"int4-keep-init", "no-cache.yaml", []string{"--set", "embedding.precision=int4", "--set", "embedding.quantize_init=false"}, "no-cache.yaml", false},
		// mpcache's snapshot, over INT8 stochastic tables and over FP32
		// ones.
		{"mixed-precision", "mixed-precision.yaml", nil, "mixed-precision.yaml", false},
		{"mixed-precision-cache", "mixed-precision-cache.yaml", nil, "mixed-precision-cache.yaml", false},
	}
}

// TestResumeGivesTheUninterruptedDigest runs each graph with a checkpoint
// every 8 batches (at 8 and 16), then resumed from the checkpoint at
// batch 8: both end with the digest of the uninterrupted run (of the
// graph's exact reference: the same digest, DESIGN §2.4), and the resumed
// run's results count every batch and hold the same training metrics
// (loss curve, AUC, DSF ratio); with a policy that takes snapshots, the
// same cache statistics and modeled clock.
func TestResumeGivesTheUninterruptedDigest(t *testing.T) {
	refs := map[string]*results.Results{}
	for _, c := range ckptCases() {
		t.Run(c.name, func(t *testing.T) {
			graph := filepath.Join(repoGraphs, c.graph)
			args := append(append([]string(nil), small...), c.sets...)
			// A case whose reference is its own graph runs it with its own
			// settings, uninterrupted.
			refArgs, key := small, c.ref
			if c.ref == c.graph {
				refArgs, key = args, c.ref+strings.Join(c.sets, " ")
			}
			plain := refs[key]
			if plain == nil {
				plain = runResults(t, filepath.Join(repoGraphs, c.ref), refArgs...)
				refs[key] = plain
			}
			dir := t.TempDir()
			ck := runResults(t, graph, append(args, "--checkpoint-every", "8", "--checkpoint-dir", dir)...)
			if ck.Digest != plain.Digest {
				t.Fatalf("checkpointing changed the digest: %s, uninterrupted %s", ck.Digest, plain.Digest)
			}
			for _, b := range []uint64{8, 16} {
				if _, err := checkpoint.Open(filepath.Join(dir, checkpoint.Name(b))); err != nil {
					t.Fatalf("checkpoint at %d: %v", b, err)
				}
			}
			res := runResults(t, graph, append(args, "--resume", filepath.Join(dir, checkpoint.Name(8)))...)
			if res.Digest != plain.Digest {
				t.Fatalf("resumed at batch 8: digest %s, uninterrupted %s", res.Digest, plain.Digest)
			}
			for i, s := range res.Stages {
				if s.Batches != ck.Stages[i].Batches {
					t.Errorf("stage %s: %d batches after resume, %d uninterrupted", s.Name, s.Batches, ck.Stages[i].Batches)
				}
			}
			// Training metrics (loss curve, AUC, dsf_ratio, ...) too.
			if a, b := asJSON(t, res.Metrics), asJSON(t, ck.Metrics); a != b {
				t.Errorf("metrics after resume %s, uninterrupted %s", a, b)
			}
			if c.cold {
				return
			}
			// With the policy's snapshot and Storage restored, the cache
			// and the modeled clock are the uninterrupted run's too.
			if a, b := asJSON(t, res.Cache), asJSON(t, ck.Cache); a != b {
				t.Errorf("cache after resume %s, uninterrupted %s", a, b)
			}
			if a, b := asJSON(t, res.ModeledClock), asJSON(t, ck.ModeledClock); a != b {
				t.Errorf("modeled clock after resume %s, uninterrupted %s", a, b)
			}
		})
	}
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestResumeRefusesAnotherRunsCheckpoint: a checkpoint of another seed,
// graph or config, or one corrupted, is refused with one line and exit 2.
func TestResumeRefusesAnotherRunsCheckpoint(t *testing.T) {
	graph := filepath.Join(repoGraphs, "scratchpipe.yaml")
	dir := t.TempDir()
	runResults(t, graph, append(append([]string(nil), small...), "--checkpoint-every", "8", "--checkpoint-dir", dir)...)
	at8 := filepath.Join(dir, checkpoint.Name(8))
	refused := func(t *testing.T, want string, args ...string) {
		t.Helper()
		r := flowrun(t, append([]string{"run", "-q"}, args...)...)
		var ue usageError
		if !errors.As(r.err, &ue) {
			t.Fatalf("%v: not a usage error (exit 2)\n%s", r.err, r.stderr)
		}
		if msg := r.err.Error(); !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
			t.Fatalf("error %q, want one line saying %q", msg, want)
		}
	}
	with := func(extra ...string) []string { return append(append([]string(nil), small...), extra...) }
	t.Run("seed", func(t *testing.T) {
		refused(t, "seed 1, this run has seed 2", append([]string{graph, "--resume", at8}, with("--set", "seed=2")...)...)
	})
	t.Run("graph", func(t *testing.T) {
		refused(t, "of graph", append([]string{filepath.Join(repoGraphs, "tensorcasting.yaml"), "--resume", at8}, small...)...)
	})
	t.Run("config", func(t *testing.T) {
		refused(t, "config", append([]string{graph, "--resume", at8}, with("--set", "model.options.learning_rate=0.1")...)...)
	})
	t.Run("corrupt", func(t *testing.T) {
		rows := filepath.Join(dir, checkpoint.Name(16), "rows")
		b, err := os.ReadFile(rows)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 1
		if err := os.WriteFile(rows, b, 0o644); err != nil {
			t.Fatal(err)
		}
		refused(t, "rows has another SHA-256", append([]string{graph, "--resume", dir}, small...)...)
		if err := os.Truncate(rows, int64(len(b)-3)); err != nil {
			t.Fatal(err)
		}
		refused(t, "truncated", append([]string{graph, "--resume", dir}, small...)...)
	})
}
