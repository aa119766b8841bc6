// Package load is the source stage: it fills each batch buffer with the
// IDs, bag offsets, dense features and labels of the next batch.
package load

import (
	"context"
	"fmt"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/data"
	"github.com/flowrun/flowrun/framework/stage"
)

type loader struct {
	gen         *data.Synthetic
	train, eval uint64
}

func newLoader(set stage.Settings, cfg *Config) (*loader, error) {
	d := set.Graph.Dataset
	gen, err := data.NewSynthetic(set.Graph.Seed, d)
	if err != nil {
		return nil, err
	}
	l := &loader{gen: gen, train: uint64(d.Batches)}
	if cfg.Eval {
		l.eval = uint64(d.EvalBatches)
	}
	return l, nil
}

// Batches is the training batches followed by the held-out ones.
func (l *loader) Batches() uint64 { return l.train + l.eval }

// Next fills batch b.Seq: training batches first, then held-out ones.
func (l *loader) Next(_ context.Context, b *batch.Batch) error {
	if b.Seq >= l.Batches() {
		return fmt.Errorf("batch %d is past the dataset's %d batches", b.Seq, l.Batches())
	}
	b.Eval = b.Seq >= l.train
	var a data.Arrays
	var err error
	if a.IDs, err = b.Int64s(batch.IDs); err != nil {
		return err
	}
	if a.Offsets, err = b.Int64s(batch.Offsets); err != nil {
		return err
	}
	if a.Dense, err = b.Float32s(batch.Dense); err != nil {
		return err
	}
	if a.Labels, err = b.Float32s(batch.Labels); err != nil {
		return err
	}
	if err := l.gen.Fill(b.Seq, b.Eval, a); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	b.SetStat("samples", int64(len(a.Labels)))
	b.SetStat("ids", int64(len(a.IDs)))
	return nil
}
