// Package train is the stage that trains on a batch: it pools the batch's
// embedding rows from the host tables (kernel gather-reduce), runs the
// dense model forward and backward (model plugin), and applies the pooled
// gradients to the rows (kernel scatter). Held-out batches are only scored;
// at the end of the run their scores give AUC, logloss and NE.
package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/region"
)

type trainer struct {
	set    stage.Settings
	cfg    *Config
	reduce kernel.Reduce
	// opt is the graph's embedding optimizer (embedding.optimizer); its
	// state is in the rows the tables' Stride describes.
	opt  kernel.Optimizer
	host device.Device
	gpu  device.Device

	mu             sync.Mutex
	scores, labels []float32

	// With source: storage, the scratch a batch needs when some of its
	// rows live outside Storage (see place): an index array, the staged
	// rows, and each staged row's scratch row. Created on first need.
	scratchIdx, scratchRows *region.Region
	scratchOf               map[int64]int64

	// With backward: cast, the casted offsets and coalesced gradients
	// (see castBackward), the latter from byte castGradsAt.
	castScratch *region.Region
	castGradsAt int64
	// back is where coalescing is charged: BackwardDevice, else host.
	back device.Device
}

func newTrainer(set stage.Settings, cfg *Config) (*trainer, error) {
	t := &trainer{set: set, cfg: cfg}
	var err error
	if t.reduce, err = kernel.ParseReduce(cfg.Reduce); err != nil {
		return nil, fmt.Errorf("reduce: %w", err)
	}
	if t.opt, err = kernel.ParseOptimizer(set.Graph.Embedding.Optimizer); err != nil {
		return nil, fmt.Errorf("embedding.optimizer: %w", err)
	}
	if t.host, err = set.Device("host_device", cfg.HostDevice); err != nil {
		return nil, err
	}
	t.back = t.host
	if cfg.BackwardDevice != "" {
		if t.back, err = set.Device("backward_device", cfg.BackwardDevice); err != nil {
			return nil, err
		}
	}
	if t.gpu, err = set.Device("compute_device", cfg.ComputeDevice); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *trainer) bags(b *batch.Batch) (kernel.Bags, error) {
	ids, err := b.Ref(batch.IDs)
	if err != nil {
		return kernel.Bags{}, err
	}
	offs, err := b.Ref(batch.Offsets)
	if err != nil {
		return kernel.Bags{}, err
	}
	return kernel.Bags{Batch: t.set.Layout.BatchSize, Indices: ids, IndexStart: t.set.Layout.IndexStart()[:t.set.Layout.Tables], Offsets: offs}, nil
}

func (t *trainer) Process(ctx context.Context, b *batch.Batch) error {
	bags, err := t.bags(b)
	if err != nil {
		return err
	}
	pooled, err := b.Ref(batch.Pooled)
	if err != nil {
		return err
	}
	tables := t.set.Tables.Kernel()
	var pl *placement
	if t.cfg.Source == SourceStorage {
		if err := t.checkHazards(b); err != nil {
			return err
		}
		if pl, err = t.place(b, bags); err != nil {
			return err
		}
		bags, tables = pl.bags, pl.tables
	}
	clock := time.Now()
	lap := func(stat string) {
		now := time.Now()
		b.SetStat(stat, b.Stats[stat]+now.Sub(clock).Nanoseconds())
		clock = now
	}
	gather, err := t.set.Kernel.GatherReduce(ctx, &kernel.GatherReduceRequest{Tables: tables, Bags: bags, Reduce: t.reduce, Out: pooled})
	if err != nil {
		return fmt.Errorf("gather-reduce: %w", err)
	}
	lap(PrimGather)
	step := &model.StepRequest{Seq: b.Seq, Batch: t.set.Layout.BatchSize, Pooled: pooled, Train: !b.Eval}
	if step.Dense, err = b.Ref(batch.Dense); err != nil {
		return err
	}
	if step.Labels, err = b.Ref(batch.Labels); err != nil {
		return err
	}
	if step.Scores, err = b.Ref(batch.Scores); err != nil {
		return err
	}
	if step.PooledGrad, err = b.Ref(batch.Grads); err != nil {
		return err
	}
	res, err := t.set.Model.Step(ctx, step)
	if err != nil {
		return fmt.Errorf("model step: %w", err)
	}
	if math.IsNaN(res.Loss) || math.IsInf(res.Loss, 0) {
		// Nothing after a diverged step means anything: stop here, naming
		// the batch, rather than train on NaNs and write them as results.
		return fmt.Errorf("training diverged: the loss is %v (lower the learning rates: train's learning_rate, model.options.learning_rate)", res.Loss)
	}
	lap(PrimMLP)
	ops := []device.Op{{Name: "gather-reduce", Kind: device.Read, Bytes: gather.BytesRead}}
	var backOps []device.Op
	gpuOps := []device.Op{
		{Name: "pooled-to-device", Kind: device.Transfer, Bytes: pooled.Length},
		{Name: "mlp", Kind: device.Compute, FLOPs: res.FLOPs},
	}
	b.SetStat("gather_bytes", gather.BytesRead)
	switch {
	case b.Eval:
		if err := t.keepScores(b); err != nil {
			return err
		}
	case t.cfg.Backward == BackwardCast || t.cfg.BackwardDevice != "" && pl == nil:
		coalesce, apply, unique, err := t.unfused(ctx, b, tables, bags, step.PooledGrad, lap)
		if err != nil {
			return err
		}
		backOps = append([]device.Op{coalesce}, t.handOff(unique)...)
		ops = append(ops, device.Op{Name: OpApply, Kind: device.Write, Bytes: apply.BytesRead + apply.BytesWritten})
		b.SetStat("scatter_bytes", apply.BytesWritten)
		lap(PrimScatter)
	default:
		scatter, err := t.set.Kernel.Scatter(ctx, &kernel.ScatterRequest{
			Tables: tables, Bags: bags, Reduce: t.reduce, Grads: step.PooledGrad,
			Optimizer: t.opt, LearningRate: float32(t.cfg.LearningRate), Epsilon: float32(t.set.Graph.Embedding.Epsilon),
		})
		if err != nil {
			return fmt.Errorf("scatter: %w", err)
		}
		lap(PrimScatter)
		if pl != nil {
			t.restore(pl)
		}
		ops = append(ops, device.Op{Name: "scatter", Kind: device.Write, Bytes: scatter.BytesRead + scatter.BytesWritten})
		b.SetStat("scatter_bytes", scatter.BytesWritten)
	}
	if !b.Eval {
		gpuOps = append(gpuOps,
			// The training framework's fixed cost per step, priced by the
			// compute device's op_overhead_ms (0 unless a profile or the
			// graph sets one).
			device.Op{Name: OpTrainStep, Kind: device.Compute},
			device.Op{Name: "grads-to-host", Kind: device.Transfer, Bytes: step.PooledGrad.Length})
		t.set.Metrics.Append("loss", b.Seq, res.Loss)
	}
	if pl != nil {
		ops, gpuOps = pl.charge(ops, gpuOps)
	}
	modeled, err := t.charge(ctx, b, t.cfg.HostDevice, t.host, ops)
	if err != nil {
		return err
	}
	backNs, err := t.charge(ctx, b, t.backName(), t.back, backOps)
	if err != nil {
		return err
	}
	gpuNs, err := t.charge(ctx, b, t.cfg.ComputeDevice, t.gpu, gpuOps)
	if err != nil {
		return err
	}
	b.SetStat("modeled_ns", modeled+backNs+gpuNs)
	return nil
}

// checkHazards asks the hazard checker, if the run has one, whether b may
// read the slots it trains in (RAW 1: an earlier batch's train still
// updating one) and the host rows it trains in place of a slot.
func (t *trainer) checkHazards(b *batch.Batch) error {
	hz := t.set.Hazards
	if hz == nil {
		return nil
	}
	slots, err := b.Int64s(batch.Slots)
	if err != nil {
		return err
	}
	ids, err := b.Int64s(batch.IDs)
	if err != nil {
		return err
	}
	start := t.set.Layout.IndexStart()
	var bypassed []int64
	for tab := range t.set.Layout.Tables {
		lo, hi := start[tab], start[tab+1]
		if err := hz.ReadSlots(b.Seq, string(Kind), tab, slots[lo:hi]); err != nil {
			return err
		}
		bypassed = bypassed[:0]
		for i := lo; i < hi; i++ {
			if slots[i] < 0 {
				bypassed = append(bypassed, ids[i])
			}
		}
		if err := hz.ReadRows(b.Seq, string(Kind), tab, bypassed); err != nil {
			return err
		}
	}
	return nil
}

// Close removes the scratch regions.
func (t *trainer) Close(context.Context) error {
	var errs []error
	for _, r := range []*region.Region{t.scratchIdx, t.scratchRows, t.castScratch} {
		if r != nil {
			errs = append(errs, r.Close())
		}
	}
	return errors.Join(errs...)
}

func (t *trainer) keepScores(b *batch.Batch) error {
	scores, err := b.Float32s(batch.Scores)
	if err != nil {
		return err
	}
	labels, err := b.Float32s(batch.Labels)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.scores = append(t.scores, scores[:t.set.Layout.BatchSize]...)
	t.labels = append(t.labels, labels[:t.set.Layout.BatchSize]...)
	return nil
}

// Finish turns the held-out scores into AUC, logloss and NE.
func (t *trainer) Finish(context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.scores) == 0 {
		return nil
	}
	e := Evaluate(t.scores, t.labels)
	// AUC and NE are undefined when the held-out labels are one class;
	// they are then left out rather than written as NaN (not JSON).
	if !math.IsNaN(e.AUC) {
		t.set.Metrics.Set("auc", e.AUC)
		t.set.Metrics.Set("ne", e.NE)
	}
	if !math.IsNaN(e.LogLoss) {
		t.set.Metrics.Set("logloss", e.LogLoss)
	}
	t.set.Metrics.Set("eval_samples", float64(len(t.scores)))
	return nil
}
