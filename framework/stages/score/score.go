// Package score is the forward-only stage of inference graphs: it pools a
// batch's embedding rows from the host tables (kernel gather-reduce) and
// runs the dense model forward (model plugin, Train false), writing one
// predicted probability per sample into the batch's scores array. It
// updates nothing and keeps nothing: what happens to the scores (top-k
// filtering, a later ranking stage) is downstream's business.
//
// A RecPipe backend ranks only what a frontend kept (candidates: topk),
// and may rank with a model of its own (model: NAME, whose tables the
// runtime hands it): then the candidates are compacted into a region of
// the stage's (subset.go). The package imports the batch and stage
// packages and the SDK, never another stage kind.
package score

import (
	"context"
	"errors"
	"fmt"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/region"
)

type scorer struct {
	set       stage.Settings
	reduce    kernel.Reduce
	cfg       *Config
	host, gpu device.Device
	// sub is the region the candidates are compacted into when the stage
	// ranks a subset, uses a model of its own or stages rows (nil: the
	// batch's arrays).
	sub *subset
	// stg stages the rows of tables stored below FP32 (nil: none).
	stg   *staging
	cands []int64
	// keys are the rows the batch's scored candidates look up, as
	// device.RowKeys, sent with the gather's cost.
	keys []uint64
}

func newScorer(set stage.Settings, cfg *Config) (*scorer, error) {
	s := &scorer{set: set, cfg: cfg}
	var err error
	if s.reduce, err = kernel.ParseReduce(cfg.Reduce); err != nil {
		return nil, fmt.Errorf("reduce: %w", err)
	}
	if s.host, err = set.Device("host_device", cfg.HostDevice); err != nil {
		return nil, err
	}
	if s.gpu, err = set.Device("compute_device", cfg.ComputeDevice); err != nil {
		return nil, err
	}
	low := false
	for tab := range set.Layout.Tables {
		low = low || set.Tables != nil && !set.Tables.Direct(tab)
	}
	if cfg.Candidates == Survivors || cfg.Model != "" || low {
		if s.sub, err = newSubset(set.Name, set.Layout, set.Tables.Dim); err != nil {
			return nil, err
		}
	}
	if low {
		if s.stg, err = newStaging(set.Name, set.Layout); err != nil {
			return nil, errors.Join(err, s.sub.close())
		}
	}
	return s, nil
}

// Process scores the batch's candidates: every one in the batch's own
// arrays, or, with candidates: topk or a model of its own, the ones it
// ranks in the stage's region (processSubset).
func (s *scorer) Process(ctx context.Context, b *batch.Batch) error {
	if s.sub != nil {
		cands, err := s.candidates(b)
		if err != nil {
			return err
		}
		return s.processSubset(ctx, b, cands)
	}
	l := s.set.Layout
	bags := kernel.Bags{Batch: l.BatchSize, IndexStart: l.IndexStart()[:l.Tables]}
	step := &model.StepRequest{Seq: b.Seq, Batch: l.BatchSize, Train: false}
	var pooled region.Ref
	for _, x := range []struct {
		array batch.Field
		dst   *region.Ref
	}{
		{batch.IDs, &bags.Indices}, {batch.Offsets, &bags.Offsets}, {batch.Pooled, &pooled},
		{batch.Dense, &step.Dense}, {batch.Labels, &step.Labels}, {batch.Scores, &step.Scores},
	} {
		var err error
		if *x.dst, err = b.Ref(x.array); err != nil {
			return err
		}
	}
	gather, err := s.set.Kernel.GatherReduce(ctx, &kernel.GatherReduceRequest{
		Tables: s.set.Tables.Kernel(), Bags: bags, Reduce: s.reduce, Out: pooled,
	})
	if err != nil {
		return fmt.Errorf("gather-reduce: %w", err)
	}
	step.Pooled = pooled
	res, err := s.set.Model.Step(ctx, step)
	if err != nil {
		return fmt.Errorf("model step: %w", err)
	}
	ids, err := batch.IDs.View(b)
	if err != nil {
		return err
	}
	offs, err := batch.Offsets.View(b)
	if err != nil {
		return err
	}
	s.keys = rowKeys(s.keys[:0], ids, offs, bags.IndexStart, l.BatchSize)
	return s.charge(ctx, b, gather.BytesRead, pooled.Length, res, l.BatchSize)
}

// Close removes the stage's candidate and staging regions.
func (s *scorer) Close(context.Context) error {
	var err error
	if s.sub != nil {
		err = s.sub.close()
	}
	if s.stg != nil {
		err = errors.Join(err, s.stg.close())
	}
	return err
}

// create builds a score stage from its decoded config (NewFactory).
func create(_ context.Context, set stage.Settings, c *Config) (any, error) {
	return newScorer(set, c)
}
