// Package score is the forward-only stage of inference graphs: it pools a
// batch's embedding rows from the host tables (kernel gather-reduce) and
// runs the dense model forward (model plugin, Train false), writing one
// predicted probability per sample into the batch's scores array. It
// updates nothing and keeps nothing: what happens to the scores (top-k
// filtering, a later ranking stage) is downstream's business.
package score

import (
	"context"
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
	s.gpu, err = set.Device("compute_device", cfg.ComputeDevice)
	return s, err
}

func (s *scorer) Process(ctx context.Context, b *batch.Batch) error {
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
	hostNs, err := stage.Charge(ctx, b, s.cfg.HostDevice, s.host, device.Op{Name: "gather-reduce", Kind: device.Read, Bytes: gather.BytesRead})
	if err != nil {
		return err
	}
	gpuNs, err := stage.Charge(ctx, b, s.cfg.ComputeDevice, s.gpu,
		device.Op{Name: "pooled-to-device", Kind: device.Transfer, Bytes: pooled.Length},
		device.Op{Name: "mlp", Kind: device.Compute, FLOPs: res.FLOPs})
	if err != nil {
		return err
	}
	batch.GatherBytes.Set(b, gather.BytesRead)
	Scored.Set(b, int64(l.BatchSize))
	if s.host != nil || s.gpu != nil {
		batch.ModeledNs.Set(b, hostNs+gpuNs)
	}
	return nil
}

// create builds a score stage from its decoded config (NewFactory).
func create(_ context.Context, set stage.Settings, c *Config) (any, error) {
	// score pools straight from the host tables' regions; rows stored
	// below FP32 would need train's staging, which score does not have.
	for tab := range set.Layout.Tables {
		if set.Tables != nil && !set.Tables.Direct(tab) {
			return nil, fmt.Errorf("table %d is stored at %v (embedding.precision); score reads FP32 host tables only", tab, set.Tables.PrecisionOf(tab))
		}
	}
	return newScorer(set, c)
}
