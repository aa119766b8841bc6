// Package load is the source stage: it fills each batch buffer with the
// IDs, bag offsets, dense features and labels of the next batch, made by
// the synthetic generator or read from a batch file (framework/data).
package load

import (
	"context"
	"fmt"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/data"
	"github.com/flowrun/flowrun/framework/stage"
)

type loader struct {
	src         data.Source
	done        func() error // releases src
	train, eval uint64
	tables      *batch.Tables
	layout      *batch.Layout
}

func newLoader(set stage.Settings, cfg *Config) (*loader, error) {
	d := set.Graph.Dataset
	l := &loader{train: uint64(d.Batches), tables: set.Tables, layout: set.Layout}
	var err error
	if l.src, l.done, err = data.OpenSource(set.Graph.Seed, d); err != nil {
		return nil, err
	}
	if f, ok := l.src.(*data.File); ok && uint64(d.Batches) > f.TrainBatches() && set.Logger != nil {
		n := f.TrainBatches()
		set.Logger.Info("dataset.batches is more than the file's training batches: going around it again",
			"file", d.Path, "batches", d.Batches, "file_batches", n, "epochs", float64(d.Batches)/float64(n))
	}
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
	if a.IDs, err = batch.IDs.View(b); err != nil {
		return err
	}
	if a.Offsets, err = batch.Offsets.View(b); err != nil {
		return err
	}
	if a.Dense, err = batch.Dense.View(b); err != nil {
		return err
	}
	if a.Labels, err = batch.Labels.View(b); err != nil {
		return err
	}
	if err := l.src.Fill(b.Seq, b.Eval, a); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	if err := l.touch(a.IDs, a.Offsets); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	Samples.Set(b, int64(len(a.Labels)))
	Lookups.Set(b, int64(len(a.IDs)))
	return nil
}

// touch initialises the host rows of the batch's IDs that no batch named
// before (the host tables are virtual: a row is initialised on first
// touch). It runs as soon as the batch is filled, before any later stage
// sees it, and that makes it safe under pipelining: every earlier batch
// touched its rows when it was loaded, so a row untouched so far is named
// by no batch in flight and no kernel is reading or writing it; a row that
// is touched keeps its values, which may have trained. Initial values
// depend only on (seed, table, row), so the order of first touches changes
// nothing.
func (l *loader) touch(ids, offsets []int64) error {
	if l.tables == nil {
		return nil
	}
	// Only the IDs inside the bags: the rest of the array is left over
	// from whichever batch used the buffer before, and touching it would
	// make the touched set depend on the pool.
	B := int64(l.layout.BatchSize)
	perTable := make([][]int64, l.layout.Tables)
	for t, start := range l.layout.IndexStart()[:l.layout.Tables] {
		off := offsets[int64(t)*(B+1) : int64(t+1)*(B+1)]
		if off[0] < 0 || off[B] < off[0] || start+off[B] > int64(len(ids)) {
			return fmt.Errorf("table %d: bag offsets [%d, %d) outside the batch", t, off[0], off[B])
		}
		perTable[t] = ids[start+off[0] : start+off[B]]
	}
	return l.tables.TouchTables(perTable)
}

// Close releases the data source (closes the batch file, if any).
func (l *loader) Close(context.Context) error { return l.done() }

// create builds a load stage from its decoded config (NewFactory).
func create(_ context.Context, set stage.Settings, c *Config) (any, error) { return newLoader(set, c) }
