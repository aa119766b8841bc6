package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/flowrun/flowrun/framework/checkpoint"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/engine"
)

// checkpointFlags are run's --checkpoint-every, --checkpoint-dir and
// --resume.
type checkpointFlags struct {
	every  uint64
	dir    string
	resume string
	save   string
}

func (c *checkpointFlags) register(cmd *cobra.Command) {
	cmd.Flags().Uint64Var(&c.every, "checkpoint-every", 0, "write a checkpoint every `N` training batches (0: none), under --checkpoint-dir")
	cmd.Flags().StringVar(&c.dir, "checkpoint-dir", "", "where checkpoints go, each in ckpt-BATCH (default: the --resume root, else checkpoints/GRAPH-NAME); the newest 2 are kept")
	cmd.Flags().StringVar(&c.save, "save-model", "", "at the end of the run, save its model (dense state and touched rows, with the digest) under `DIR` as ckpt-BATCHES, for an inference graph's models: NAME: checkpoint:")
	cmd.Flags().StringVar(&c.resume, "resume", "", "continue the run a checkpoint saved: `DIR` is a checkpoint (ckpt-BATCH) or a --checkpoint-dir, whose newest is taken")
}

// options opens and verifies the checkpoint to resume from, if any, and
// says where new ones go. A corrupt checkpoint is a usage error (exit 2).
func (c *checkpointFlags) options(graphName string) (engine.CheckpointOptions, error) {
	opts := engine.CheckpointOptions{Every: c.every, Dir: c.dir, SaveModel: c.save}
	if c.resume != "" {
		ck, err := checkpoint.Open(c.resume)
		if err != nil {
			return opts, usageError{fmt.Errorf("--resume: %w", err)}
		}
		opts.Resume = ck
		if opts.Dir == "" {
			opts.Dir = filepath.Dir(ck.Dir)
		}
	}
	if opts.Dir == "" {
		opts.Dir = filepath.Join("checkpoints", graphName)
	}
	return opts, nil
}

// checkpointFailure makes a checkpoint the run refused (another graph,
// seed or config; corrupt; a model checkpoint of another model) a usage
// error: exit 2, like a bad graph, located at the graph's line or --set
// flag when it is a key's (models.NAME.checkpoint).
func checkpointFailure(err error, path string, sets []string) error {
	if errors.Is(err, checkpoint.ErrMismatch) || errors.Is(err, checkpoint.ErrCorrupt) || errors.Is(err, engine.ErrModelCheckpoint) {
		var ce *config.Error
		if errors.As(err, &ce) && ce.File == "" {
			if _, src, lerr := config.LoadPartial(path, sets); lerr == nil {
				err = src.Annotate(err)
			}
		}
		return usageError{err}
	}
	return err
}
