package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/checkpoint"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/sdk/model"
)

// A model checkpoint is a trained model to serve: what a training run
// leaves at its end (CheckpointOptions.SaveModel, flowrun run
// --save-model) in framework/checkpoint's format, with the same rows and
// model parts as a resume checkpoint, and notes that say which model it
// is. An inference graph loads it into a named model (models: NAME:
// checkpoint: PATH): the model's tables are created from the training
// run's seed, so that rows the training never touched have the values
// they had in memory, the touched rows are put back, and the model's
// dense state too; the digest of what was loaded (tables.Digest over the
// dense digest, the training run's digest when its graph has no named
// models) must be the one the checkpoint recorded.

// ErrModelCheckpoint is wrapped by every error that refuses a named
// model's checkpoint (missing, corrupt, of another model): the graph's
// value is wrong, as with a bad key (cmd/flowrun: exit 2).
var ErrModelCheckpoint = errors.New("model checkpoint refused")

// The notes of a model checkpoint.
const (
	noteKind      = "kind"       // kindModel
	noteModelName = "model"      // the plugin's Info name
	noteDim       = "dim"        // the tables' embedding dim
	noteStride    = "stride"     // float32s per row (values and optimizer state)
	noteRows      = "table_rows" // every table's rows, comma-separated
	noteTableSeed = "table_seed" // the seed the tables were created from
	noteDigest    = "digest"     // tables.Digest(dense digest) at the end of the run
	kindModel     = "model"
)

// saveModel writes the run's model as it ends (Storage flushed; digest
// is tables.Digest of the dense digest) under opts.Checkpoint.SaveModel,
// as SaveModel/ckpt-BATCHES.
func (r *run) saveModel(ctx context.Context, digest string) error {
	root := r.opts.Checkpoint.SaveModel
	if root == "" {
		return nil
	}
	fail := func(err error) error { return fmt.Errorf("--save-model: %w", err) }
	state, err := model.StateOf(ctx, r.plugins.Model)
	if err != nil {
		return fail(err)
	}
	info, err := r.plugins.Model.Info(ctx)
	if err != nil {
		return fail(err)
	}
	id, err := Identity(r.opts.Graph)
	if err != nil {
		return fail(err)
	}
	cfg := r.opts.Graph.Config
	m := checkpoint.Manifest{Identity: id, Batch: uint64(r.total), Total: uint64(r.total), Written: time.Now().UTC(),
		Notes: map[string]string{
			noteKind: kindModel, noteModelName: info.Name,
			noteDim: strconv.Itoa(r.tables.Dim), noteStride: strconv.Itoa(r.tables.Stride),
			noteRows: joinInts(cfg.Dataset.AllRows()), noteTableSeed: strconv.FormatUint(cfg.Seed, 10),
			noteDigest: digest,
		}}
	rows := storageOverlay{tables: r.tables} // Storage has given its rows back
	dir, err := checkpoint.Write(root, m, []checkpoint.Part{
		{Name: partRows, Write: func(w io.Writer) error { return checkpoint.EncodeRows(w, rows.init()) }},
		{Name: partModel, Write: writeBytes(state)},
	})
	if err != nil {
		return fail(err)
	}
	r.log.Info("model saved", "dir", dir, "digest", digest)
	return nil
}

// checkSaveModel fails a run that could not save its model now, not
// after its training: the model must save its state (model.Stater).
func (r *run) checkSaveModel(ctx context.Context) error {
	if r.opts.Checkpoint.SaveModel == "" {
		return nil
	}
	if _, err := model.StateOf(ctx, r.plugins.Model); err != nil {
		return fmt.Errorf("--save-model: %w", err)
	}
	return nil
}

func joinInts(v []int64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatInt(x, 10)
	}
	return strings.Join(s, ",")
}

// modelTables is named model m's tables: new ones (newModelTables), or,
// when it names a checkpoint, the checkpoint's, with the model's dense
// state restored into mod. An error is located at models.NAME.checkpoint
// and wraps checkpoint.ErrCorrupt or checkpoint.ErrMismatch when the
// checkpoint is refused.
func (s *Shape) modelTables(ctx context.Context, name string, m config.NamedModel, mod model.Model) (*batch.Tables, error) {
	if m.Checkpoint == "" {
		tables, err := s.newModelTables(name, m)
		if err != nil {
			return nil, fmt.Errorf("models %s: %w", name, err)
		}
		return tables, nil
	}
	key := modelPath(name, "checkpoint")
	ck, err := checkpoint.Open(m.Checkpoint)
	if err != nil {
		return nil, config.At(key, fmt.Errorf("%w: %w (flowrun run --save-model writes one)", ErrModelCheckpoint, err))
	}
	tables, err := s.loadModel(ctx, ck, m, mod)
	if err != nil {
		return nil, config.At(key, fmt.Errorf("%w: %s: %w", ErrModelCheckpoint, ck.Dir, err))
	}
	return tables, nil
}

// loadModel checks that ck is a model checkpoint of m's shape, creates
// its tables and restores them and mod from it, and checks the digest.
func (s *Shape) loadModel(ctx context.Context, ck *checkpoint.Checkpoint, m config.NamedModel, mod model.Model) (*batch.Tables, error) {
	seed, err := s.checkModelNotes(ctx, ck, m, mod)
	if err != nil {
		return nil, err
	}
	_, stride, err := batch.RowStride(s.Config.Embedding, m.Dim)
	if err != nil {
		return nil, err
	}
	tables, err := batch.NewTablesRows(seed, s.Config.Dataset.AllRows(), m.Dim, stride)
	if err != nil {
		return nil, err
	}
	if err := restoreModel(ctx, ck, tables, mod); err != nil {
		return nil, errors.Join(err, tables.Close())
	}
	return tables, nil
}

// checkModelNotes refuses a checkpoint that is not a model checkpoint of
// m's model, dim, row width and tables, and returns its table seed.
func (s *Shape) checkModelNotes(ctx context.Context, ck *checkpoint.Checkpoint, m config.NamedModel, mod model.Model) (uint64, error) {
	notes := ck.Notes
	if notes[noteKind] != kindModel {
		return 0, fmt.Errorf("%w: it is not a model checkpoint (flowrun run --save-model writes one; a --checkpoint-every checkpoint resumes a run)", checkpoint.ErrMismatch)
	}
	info, err := mod.Info(ctx)
	if err != nil {
		return 0, err
	}
	_, stride, err := batch.RowStride(s.Config.Embedding, m.Dim)
	if err != nil {
		return 0, err
	}
	want := map[string]string{
		noteModelName: info.Name, noteDim: strconv.Itoa(m.Dim), noteStride: strconv.Itoa(stride),
		noteRows: joinInts(s.Config.Dataset.AllRows()),
	}
	what := map[string]string{noteModelName: "model", noteDim: "dim", noteStride: "row width in float32s (values and embedding optimizer state)",
		noteRows: "tables' rows"}
	for _, k := range []string{noteModelName, noteDim, noteStride, noteRows} {
		if got := notes[k]; got != want[k] {
			return 0, fmt.Errorf("%w: its %s is %.40q, this model's is %.40q", checkpoint.ErrMismatch, what[k], got, want[k])
		}
	}
	seed, err := strconv.ParseUint(notes[noteTableSeed], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: table seed %q", checkpoint.ErrCorrupt, notes[noteTableSeed])
	}
	return seed, nil
}

// restoreModel puts back ck's touched rows into tables and its dense
// state into mod, then checks the digest of what it loaded.
func restoreModel(ctx context.Context, ck *checkpoint.Checkpoint, tables *batch.Tables, mod model.Model) error {
	rows, ok := ck.Part(partRows)
	if !ok {
		return fmt.Errorf("%w: it has no %s part", checkpoint.ErrCorrupt, partRows)
	}
	err := checkpoint.DecodeRows(rows, func(t, rowBytes int, _ uint64) error {
		if t >= tables.Len() || rowBytes != tables.RowBytes(t) {
			return fmt.Errorf("%w: table %d's rows are %d bytes, this model's are not", checkpoint.ErrMismatch, t, rowBytes)
		}
		return nil
	}, tables.RestoreRow)
	if err != nil {
		return err
	}
	state, ok := ck.Part(partModel)
	if !ok {
		return fmt.Errorf("%w: it has no %s part", checkpoint.ErrCorrupt, partModel)
	}
	if err := model.SetStateOf(ctx, mod, state); err != nil {
		return fmt.Errorf("%w: dense state: %v (the model's options must be the training graph's)", checkpoint.ErrMismatch, err)
	}
	dense, err := mod.Digest(ctx)
	if err != nil {
		return fmt.Errorf("digest: %w", err)
	}
	if got, want := tables.Digest(dense), ck.Notes[noteDigest]; got != want {
		return fmt.Errorf("%w: the loaded model's digest is %.12s, the checkpoint recorded %.12s", checkpoint.ErrMismatch, got, want)
	}
	return nil
}
