package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/checkpoint"
	"github.com/flowrun/flowrun/framework/engine"
	"github.com/flowrun/flowrun/framework/record"
	"github.com/flowrun/flowrun/framework/results"
)

// replayCase is a graph recorded and replayed: scratchpipe pipelined,
// and the straw-man's sequential graph under LRU.
type replayCase struct {
	name, graph string
	sets        []string
	// record are extra flags of the recording run.
	record []string
}

func replayCases() []replayCase {
	return []replayCase{
		{"scratchpipe", "scratchpipe.yaml", nil, nil},
		{"lru-sequential", "strawman.yaml", []string{"--set", "cache.plugin=builtin:lru", "--set", "cache.options=null"}, nil},
		// Random victims: the policy takes no snapshot and restarts cold
		// at the checkpoint, so only the lookups are compared.
		{"scratchpipe-random-victims", "strawman.yaml", []string{"--set", "cache.options.victim=random"}, nil},
		// Without the lookups: the replay regenerates them and checks
		// the plan.
		{"scratchpipe-no-lookups", "scratchpipe.yaml", nil, []string{"--record-lookups=false"}},
	}
}

// recordRun runs c recorded into a fresh directory, with a checkpoint
// every 8 batches, and returns the directory and the run's digest.
func recordRun(t *testing.T, c replayCase) (string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "rec")
	args := append(append(append(append([]string(nil), small...), c.sets...), c.record...), "--record", dir, "--checkpoint-every", "8")
	res := runResults(t, filepath.Join(repoGraphs, c.graph), args...)
	return dir, res.Digest
}

// TestReplayFromTheMiddleGivesTheDigest records each graph, then replays
// it from batch 12 (the checkpoint at 8): every batch from 8 on has the
// recorded lookups and plan decisions (hits, slots, victims; the replay
// fails at the first that differs), and the replay ends with the digest
// of the run never recorded.
func TestReplayFromTheMiddleGivesTheDigest(t *testing.T) {
	for _, c := range replayCases() {
		t.Run(c.name, func(t *testing.T) {
			plain := runResults(t, filepath.Join(repoGraphs, c.graph), append(append([]string(nil), small...), c.sets...)...)
			dir, digest := recordRun(t, c)
			if digest != plain.Digest {
				t.Fatalf("recording changed the digest: %s, unrecorded %s", digest, plain.Digest)
			}
			rec, err := record.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if rec.First != 0 || rec.Batches != 24 || rec.Digest != digest {
				t.Fatalf("record holds batches %d+%d, digest %s", rec.First, rec.Batches, rec.Digest)
			}
			out := mustFlowrun(t, "replay", dir, "--from", "12", "-q").stdout
			want := "from batch 8 (asked 12) of " + dir + ": 16 batches equal to the record"
			cold := strings.Contains(c.name, "random")
			if cold != strings.Contains(out, "plan decisions not compared") || !strings.Contains(out, want) ||
				!strings.Contains(out, "digest      "+plain.Digest+", the recorded run's") {
				t.Fatalf("replay said:\n%s\nwant %q and the digest %s", out, want, plain.Digest)
			}
			// The hazard checker runs on a replay from a checkpoint.
			out = mustFlowrun(t, "replay", dir, "--from", "16", "-q", "--check-hazards").stdout
			if !strings.Contains(out, "from batch 16") || !strings.Contains(out, plain.Digest) {
				t.Fatalf("replay with --check-hazards said:\n%s", out)
			}
		})
	}
}

// whatIfHits parses replay's what-if table: the recorded policy's hits
// and misses (policy, "(recorded)", hits, misses, rate), then the
// what-if's (policy, size, hits, misses, evictions, rate).
func whatIfHits(t *testing.T, out string) [2][2]int64 {
	t.Helper()
	var hm [2][2]int64
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 5 && f[1] == "(recorded)":
			hm[0][0], _ = strconv.ParseInt(f[2], 10, 64)
			hm[0][1], _ = strconv.ParseInt(f[3], 10, 64)
			rows++
		case len(f) == 6 && f[0] != "policy":
			hm[1][0], _ = strconv.ParseInt(f[2], 10, 64)
			hm[1][1], _ = strconv.ParseInt(f[3], 10, 64)
			rows++
		}
	}
	if rows != 2 {
		t.Fatalf("what-if table:\n%s", out)
	}
	return hm
}

// TestReplayWhatIf plans a recorded LRU stream with LFU and Belady and
// reports their hits beside LRU's; planned from batch 0 by the recorded
// policy itself, the what-if makes exactly the recorded hits.
func TestReplayWhatIf(t *testing.T) {
	c := replayCases()[1]
	dir, _ := recordRun(t, c)
	same := whatIfHits(t, mustFlowrun(t, "replay", dir, "--from", "0", "--set", "cache.plugin=builtin:lru").stdout)
	if same[0] != same[1] || same[0][0] == 0 {
		t.Fatalf("LRU planned again: hits/misses %v, recorded %v", same[1], same[0])
	}
	lookups := same[0][0] + same[0][1]
	var beladyHits int64
	for _, p := range []string{"builtin:lfu", "builtin:belady"} {
		out := mustFlowrun(t, "replay", dir, "--from", "0", "--set", "cache.plugin="+p).stdout
		hm := whatIfHits(t, out)
		if hm[0] != same[0] || hm[1][0]+hm[1][1] != lookups || !strings.Contains(out, p) {
			t.Fatalf("%s what-if:\n%s", p, out)
		}
		beladyHits = hm[1][0]
	}
	// Belady is the upper bound of every policy of its size.
	if beladyHits < same[0][0] {
		t.Errorf("Belady hits %d, fewer than LRU's %d", beladyHits, same[0][0])
	}
	// A record without the lookups regenerates them: LFU's what-if is
	// the same, from a record of about half the size.
	c.record = []string{"--record-lookups=false"}
	bare, _ := recordRun(t, c)
	lfu := func(dir string) string {
		return mustFlowrun(t, "replay", dir, "--from", "0", "--set", "cache.plugin=builtin:lfu").stdout
	}
	if a, b := whatIfHits(t, lfu(bare)), whatIfHits(t, lfu(dir)); a != b {
		t.Errorf("LFU on the record without lookups %v, with %v", a, b)
	}
	r1, err := record.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := record.Open(bare)
	if err != nil {
		t.Fatal(err)
	}
	if r2.StreamBytes*10 > r1.StreamBytes*7 {
		t.Errorf("record without lookups %d bytes, with %d", r2.StreamBytes, r1.StreamBytes)
	}
	// From the middle: the what-if starts cold there.
	mid := whatIfHits(t, mustFlowrun(t, "replay", dir, "--from", "12", "--set", "cache.size=0.1").stdout)
	if mid[0][0]+mid[0][1] >= lookups || mid[1][0]+mid[1][1] != mid[0][0]+mid[0][1] {
		t.Errorf("from 12: %v, all %d lookups", mid, lookups)
	}
}

// TestReplayRefusals: a record replayed onto another graph or config,
// and a record cut short, are refused with one line and exit 2.
func TestReplayRefusals(t *testing.T) {
	dir, _ := recordRun(t, replayCases()[0])
	for _, args := range [][]string{
		{"--graph", filepath.Join(repoGraphs, "static-cache.yaml")},
		{"--set", "seed=7"},
		{"--set", "dataset.batch_size=64"},
	} {
		r := flowrun(t, append([]string{"replay", dir, "-q"}, args...)...)
		if r.err == nil || exitCode(r.err) != exitUsage || strings.Contains(r.err.Error(), "\n") ||
			!errors.Is(r.err, checkpoint.ErrMismatch) {
			t.Fatalf("replay %v: %v (exit %d)", args, r.err, exitCode(r.err))
		}
	}
	stream := filepath.Join(dir, record.StreamName)
	data, err := os.ReadFile(stream)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stream, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	r := flowrun(t, "replay", dir, "-q")
	if r.err == nil || exitCode(r.err) != exitUsage || !strings.Contains(r.err.Error(), "truncated") {
		t.Fatalf("truncated record: %v", r.err)
	}
}

// TestFailedRunLeavesItsRecord: a run that fails still writes its
// record, with the batches up to the failure and the error, and replay
// says the recorded run failed instead of comparing digests.
func TestFailedRunLeavesItsRecord(t *testing.T) {
	var sets []string
	for i := 1; i < len(small); i += 2 {
		sets = append(sets, small[i])
	}
	g, err := validateGraph(demo, sets, true)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "rec")
	f := recordFlags{dir: dir, window: 4, lookups: true}
	var ck engine.CheckpointOptions
	rec, err := f.start(g, demo, sets, &ck, false, true)
	if err != nil {
		t.Fatal(err)
	}
	if ck.Every != 1 || ck.Dir != filepath.Join(dir, record.CheckpointsDir) || ck.Keep != 6 {
		t.Fatalf("checkpoints %+v", ck)
	}
	for seq := range uint64(6) {
		if err := rec.w.Batch(record.Batch{Seq: seq, IDs: []int64{int64(seq)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.finish(nil, errors.New("stage train/train failed on batch 6: boom"), io.Discard); err != nil {
		t.Fatal(err)
	}
	got, err := record.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.First != 2 || got.Batches != 4 || got.Digest != "" || !strings.Contains(got.Failed, "boom") {
		t.Fatalf("record of a failed run: %+v", got.Manifest)
	}
	var out strings.Builder
	if err := compareDigest(&out, got, &results.Results{Digest: "abc"}); err != nil || !strings.Contains(out.String(), "the recorded run failed: stage train/train failed on batch 6: boom") {
		t.Fatalf("%v: %s", err, out.String())
	}
}

// TestReplayChecksHazardsPastTheCheckpoint replays 76 batches from a
// checkpoint under strict --check-hazards: the checker, which follows
// batches from 0 and at most 64 at once, is told the batches before the
// checkpoint left the graph (without that it fails at batch 72, its
// ring full of batch 8's retained writes).
func TestReplayChecksHazardsPastTheCheckpoint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	sets := []string{"--set", "dataset.batches=80", "--set", "dataset.rows=40000", "--set", "dataset.batch_size=64",
		"--set", "dataset.eval_batches=4", "--set", "cache.size=0.5"}
	res := runResults(t, filepath.Join(repoGraphs, "scratchpipe.yaml"), append(sets, "--record", dir, "--checkpoint-every", "8")...)
	out := mustFlowrun(t, "replay", dir, "--from", "8", "-q", "--check-hazards").stdout
	if !strings.Contains(out, "from batch 8 (asked 8)") || !strings.Contains(out, "76 batches equal") || !strings.Contains(out, res.Digest+", the recorded run's") {
		t.Fatalf("replay said:\n%s", out)
	}
}
