package engine_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/framework/checkpoint"
	"github.com/flowrun/flowrun/framework/engine"
	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/sdk/plugin"
)

const ckptStages = `
  gen: {kind: gen, out: [a], batches: 4}
  relay: {kind: relay, in: a, out: [b]}
  sink: {kind: sink, in: b}
`

// trainAtSink stands in for training: the sink moves one value of a row
// of the batch's own (table 0, row seq) at every batch, so that the rows
// the checkpoint saves carry what the batches before it did.
func trainAtSink(e *env) {
	e.rec.atBatch = func(name string, seq uint64, set stage.Settings) {
		if name == "sink" {
			set.Tables.Row(0, int64(seq))[0] += float32(seq + 1)
		}
	}
}

// TestCheckpointThenResume runs the test stages with a checkpoint every 2
// batches, then resumes from it: the resumed run processes only batches
// 2 and 3 at every stage and ends with the digest of the run that wrote
// the checkpoint, which is the digest of a run without checkpoints.
func TestCheckpointThenResume(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := func(opts engine.CheckpointOptions) (*env, string) {
		e := newEnv(t, "", ckptStages)
		trainAtSink(e)
		e.opts.Checkpoint = opts
		res, err := e.run(t)
		if err != nil {
			t.Fatal(err)
		}
		return e, res.Digest
	}
	_, plain := run(engine.CheckpointOptions{})
	var written []uint64
	_, withCk := run(engine.CheckpointOptions{Every: 2, Dir: dir, Written: func(_ string, b uint64) { written = append(written, b) }})
	if withCk != plain {
		t.Fatalf("checkpointing changed the digest: %s, without %s", withCk, plain)
	}
	if !slices.Equal(written, []uint64{2}) {
		t.Fatalf("checkpoints at %v, want [2] (4 batches, every 2; none at the last)", written)
	}
	ck, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	e, resumed := run(engine.CheckpointOptions{Resume: ck})
	if resumed != plain {
		t.Fatalf("resumed: digest %s, uninterrupted %s", resumed, plain)
	}
	for _, name := range []string{"relay", "sink"} {
		if got := e.rec.seen(name); !slices.Equal(got, []uint64{2, 3}) {
			t.Errorf("%s saw %v after the resume, want [2 3]", name, got)
		}
	}
}

// TestCheckpointNeedsModelState: a model that cannot save its state is
// refused before the first batch, not at the first checkpoint.
func TestCheckpointNeedsModelState(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", ckptStages)
	e.opts.Plugins = denseHost{Host: e.opts.Plugins.(*pluginhost.Host)}
	e.opts.Checkpoint = engine.CheckpointOptions{Every: 2, Dir: t.TempDir()}
	_, err := e.run(t)
	if !errors.Is(err, plugin.ErrUnsupported) {
		t.Fatalf("%v, want ErrUnsupported", err)
	}
	if got := e.rec.seen("sink"); len(got) != 0 {
		t.Fatalf("the sink saw %v", got)
	}
}

// TestResumeRefusesAnotherSeed: the identity is checked before anything
// is built.
func TestResumeRefusesAnotherSeed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := newEnv(t, "", ckptStages)
	e.opts.Checkpoint = engine.CheckpointOptions{Every: 2, Dir: dir}
	if _, err := e.run(t); err != nil {
		t.Fatal(err)
	}
	ck, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	other := newEnv(t, "seed: 9\n", ckptStages)
	other.opts.Checkpoint = engine.CheckpointOptions{Resume: ck}
	_, err = other.run(t)
	if !errors.Is(err, checkpoint.ErrMismatch) {
		t.Fatalf("%v, want ErrMismatch", err)
	}
}
