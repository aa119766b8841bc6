package main

import (
	"errors"
	"fmt"
	"github.com/flowrun/flowrun/framework/config"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/flowrun/flowrun/framework/engine"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/record"
	"github.com/flowrun/flowrun/framework/results"
)

// recordFlags are run's --record and --record-window.
type recordFlags struct {
	dir     string
	window  uint64
	lookups bool
}

// defaultRecordWindow is how many batches a record keeps by default: at
// graphs/scratchpipe.yaml's shape a few hundred MB (docs/reliability.md).
const defaultRecordWindow = 1024

func (r *recordFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&r.dir, "record", "", "record the run into `DIR`: its batch stream and the serving policy's plan decisions for the last --record-window batches, with checkpoints (every --checkpoint-every batches, default a quarter of the window) under DIR/checkpoints, for flowrun replay")
	cmd.Flags().Uint64Var(&r.window, "record-window", defaultRecordWindow, "the most batches a record keeps: the last `N` (older ones and their checkpoints are dropped)")
	cmd.Flags().BoolVar(&r.lookups, "record-lookups", true, "keep the batches' IDs in the record; false halves it: replay then regenerates them from the seed and the batch's position (a changed data file goes unnoticed until the plan differs)")
}

// recording is a run being recorded.
type recording struct {
	dir   string
	quiet bool
	w     *record.Writer
	m     record.Manifest
}

// start prepares a record of g's run (nil without --record): the
// manifest's identity and how the run was started, and the checkpoints'
// options (the record's cadence, under DIR/checkpoints, as many kept as
// cover the window).
func (r *recordFlags) start(g *graph.Graph, path string, sets []string, ck *engine.CheckpointOptions, dirGiven, quiet bool) (*recording, error) {
	if r.dir == "" {
		return nil, nil
	}
	if dirGiven {
		return nil, usageError{errors.New("--record keeps its checkpoints in DIR/checkpoints: drop --checkpoint-dir")}
	}
	if r.window == 0 {
		return nil, usageError{errors.New("--record-window must be at least 1")}
	}
	id, err := engine.Identity(g)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if ck.Every == 0 {
		ck.Every = max(r.window/4, 1)
	}
	ck.Dir = filepath.Join(r.dir, record.CheckpointsDir)
	ck.Keep = int(r.window/ck.Every) + 2
	cfg := g.Config
	m := record.Manifest{Identity: id, GraphFile: abs, Sets: sets, Window: r.window, CheckpointEvery: ck.Every,
		Total: uint64(cfg.Dataset.Batches + cfg.Dataset.EvalBatches), Policy: cfg.Cache.Plugin}
	return &recording{dir: r.dir, quiet: quiet, w: record.NewWriter(int(r.window), r.lookups), m: m}, nil
}

// finish writes the record, of a run that ended (res) or failed (runErr:
// the record then keeps the batches up to the failure, for replay), and
// says its size on w.
func (rec *recording) finish(res *results.Results, runErr error, w io.Writer) error {
	if rec == nil {
		return nil
	}
	m := rec.m
	if runErr != nil {
		m.Failed = runErr.Error()
	} else {
		m.Digest = res.Digest
	}
	m, err := rec.w.Write(rec.dir, m)
	if err != nil {
		return fmt.Errorf("--record %s: %w", rec.dir, err)
	}
	if !rec.quiet {
		fmt.Fprintf(w, "record %s: %s\n", rec.dir, describeRecord(m))
	}
	return nil
}

// describeRecord is a record's size in a line.
func describeRecord(m record.Manifest) string {
	if m.Batches == 0 {
		return "no batches"
	}
	ratio := 0.0
	if m.StreamBytes > 0 {
		ratio = float64(m.RawBytes) / float64(m.StreamBytes)
	}
	return fmt.Sprintf("batches %d…%d (window %d), stream %s (%.1f× smaller than the arrays, %s), checkpoints every %d batches",
		m.First, m.First+m.Batches-1, m.Window, config.FormatBytes(float64(m.StreamBytes)), ratio, config.FormatBytes(float64(m.RawBytes)), m.CheckpointEvery)
}
