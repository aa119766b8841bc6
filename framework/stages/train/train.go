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
	"sync/atomic"
	"time"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/hazard"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/stages/internal/staleness"
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

	// With low-precision host tables and source: host, the staged rows'
	// numbers for the convert operators (placeHost); noConvert is set once
	// the kernel turns out not to have them, and mapper then maps the
	// regions for the in-process conversion.
	scratchList *region.Region
	noConvert   atomic.Bool
	mapper      region.Mapper

	// With backward: cast, the casted offsets and coalesced gradients
	// (see castBackward), the latter from byte castGradsAt.
	castScratch *region.Region
	castGradsAt int64
	// back is where coalescing is charged: BackwardDevice, else host.
	back device.Device

	// stale is, with staleness: 1, the previous training batch's rows
	// and their values before its update (stale.go).
	stale staleness.Window
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
	ids, err := batch.IDs.Ref(b)
	if err != nil {
		return kernel.Bags{}, err
	}
	offs, err := batch.Offsets.Ref(b)
	if err != nil {
		return kernel.Bags{}, err
	}
	return kernel.Bags{Batch: t.set.Layout.BatchSize, Indices: ids, IndexStart: t.set.Layout.IndexStart()[:t.set.Layout.Tables], Offsets: offs}, nil
}

// pass is one batch's way through train: where its rows are trained, the
// model step, and the device ops it is charged for.
type pass struct {
	b      *batch.Batch
	bags   kernel.Bags
	tables []kernel.Table
	// pl is where the rows are with source: storage, nil with host.
	pl *placement
	// lowHost is, with source: host and low-precision tables, where their
	// rows are staged in FP32 (placeHost); nil otherwise.
	lowHost *placement
	step    *model.StepRequest
	// convOps are the low-precision rows' conversions (host device).
	convOps []device.Op
	// ops go to the host device, backOps to the backward device, gpuOps
	// to the compute device.
	ops, backOps, gpuOps []device.Op
	clock                time.Time
	// stale is, with staleness: 1, the batch's rows as swapStale left
	// them.
	stale []staleness.Row
}

// lap adds the wall time since the last lap to the primitive's stat.
func (p *pass) lap(stat batch.Stat) {
	now := time.Now()
	stat.Add(p.b, now.Sub(p.clock).Nanoseconds())
	p.clock = now
}

func (t *trainer) Process(ctx context.Context, b *batch.Batch) error {
	p, err := t.begin(ctx, b)
	if err != nil {
		return err
	}
	loss, err := t.forward(ctx, p)
	if err != nil {
		return err
	}
	if err := t.backward(ctx, p); err != nil {
		return err
	}
	t.unswapStale(p.stale)
	if !b.Eval {
		p.gpuOps = append(p.gpuOps,
			// The training framework's fixed cost per step, priced by the
			// compute device's op_overhead_ms (0 unless a profile or the
			// graph sets one).
			device.Op{Name: OpTrainStep, Kind: device.Compute},
			device.Op{Name: "grads-to-host", Kind: device.Transfer, Bytes: p.step.PooledGrad.Length})
		t.set.Metrics.Append("loss", b.Seq, loss)
	}
	if p.pl != nil {
		p.ops, p.gpuOps = p.pl.charge(p.ops, p.gpuOps)
	}
	modeled, err := t.charge(ctx, b, t.cfg.HostDevice, t.host, p.ops)
	if err != nil {
		return err
	}
	backNs, err := t.charge(ctx, b, t.backName(), t.back, p.backOps)
	if err != nil {
		return err
	}
	gpuNs, err := t.charge(ctx, b, t.cfg.ComputeDevice, t.gpu, p.gpuOps)
	if err != nil {
		return err
	}
	batch.ModeledNs.Set(b, modeled+backNs+gpuNs)
	return nil
}

// begin finds b's arrays and, with source: storage, where its rows are.
func (t *trainer) begin(ctx context.Context, b *batch.Batch) (*pass, error) {
	p := &pass{b: b, tables: t.set.Tables.Kernel(),
		step: &model.StepRequest{Seq: b.Seq, Batch: t.set.Layout.BatchSize, Train: !b.Eval}}
	var err error
	if p.bags, err = t.bags(b); err != nil {
		return nil, err
	}
	for _, x := range []struct {
		array batch.Field
		dst   *region.Ref
	}{
		{batch.Pooled, &p.step.Pooled}, {batch.Dense, &p.step.Dense}, {batch.Labels, &p.step.Labels},
		{batch.Scores, &p.step.Scores}, {batch.Grads, &p.step.PooledGrad},
	} {
		if *x.dst, err = b.Ref(x.array); err != nil {
			return nil, err
		}
	}
	if t.cfg.Source == SourceStorage {
		if err := t.checkHazards(b); err != nil {
			return nil, err
		}
		if p.stale, err = t.swapStale(b); err != nil {
			return nil, err
		}
		if p.pl, err = t.place(b, p.bags); err != nil {
			return nil, err
		}
		p.bags, p.tables = p.pl.bags, p.pl.tables
	} else if p.stale, err = t.swapStale(b); err != nil {
		return nil, err
	} else if t.lowPrecision() {
		if t.cfg.Backward == BackwardCast {
			// The casted index names host rows, not the staged copies.
			return nil, fmt.Errorf("batch %d: backward: %s does not train low-precision host tables (embedding.precision); use the fused backward", b.Seq, BackwardCast)
		}
		var ops []device.Op
		if p.lowHost, ops, err = t.placeHost(ctx, b, p.bags); err != nil {
			return nil, err
		}
		p.convOps = ops
		p.bags, p.tables = p.lowHost.bags, p.lowHost.tables
	}
	return p, nil
}

// forward pools the batch's rows and runs the model's step (forward, and
// backward to the pooled gradients when the batch trains), returning the
// loss.
func (t *trainer) forward(ctx context.Context, p *pass) (float64, error) {
	p.clock = time.Now()
	gather, err := t.set.Kernel.GatherReduce(ctx, &kernel.GatherReduceRequest{Tables: p.tables, Bags: p.bags, Reduce: t.reduce, Out: p.step.Pooled})
	if err != nil {
		return 0, fmt.Errorf("gather-reduce: %w", err)
	}
	p.lap(PrimGather)
	res, err := t.set.Model.Step(ctx, p.step)
	if err != nil {
		return 0, fmt.Errorf("model step: %w", err)
	}
	if math.IsNaN(res.Loss) || math.IsInf(res.Loss, 0) {
		// Nothing after a diverged step means anything: stop here, naming
		// the batch, rather than train on NaNs and write them as results.
		return 0, fmt.Errorf("training diverged: the loss is %v (lower the learning rates: train's learning_rate, model.options.learning_rate)", res.Loss)
	}
	p.lap(PrimMLP)
	p.ops = append(p.convOps, device.Op{Name: "gather-reduce", Kind: device.Read, Bytes: gather.BytesRead})
	p.gpuOps = []device.Op{
		{Name: "pooled-to-device", Kind: device.Transfer, Bytes: p.step.Pooled.Length},
		{Name: "mlp", Kind: device.Compute, FLOPs: res.FLOPs},
	}
	batch.GatherBytes.Set(p.b, gather.BytesRead)
	return res.Loss, nil
}

// backward applies the pooled gradients to the rows: nothing for a
// held-out batch (its scores are kept), coalescing as a step of its own
// then the update (backward: cast, or a backward device), or the kernel's
// scatter, which fuses them.
func (t *trainer) backward(ctx context.Context, p *pass) error {
	b := p.b
	switch {
	case b.Eval:
		return t.keepScores(b)
	case t.cfg.Backward == BackwardCast || t.cfg.BackwardDevice != "" && p.pl == nil:
		coalesce, apply, unique, err := t.unfused(ctx, b, p.tables, p.bags, p.step.PooledGrad, p.lap)
		if err != nil {
			return err
		}
		if err := t.storeLow(ctx, p); err != nil {
			return err
		}
		p.backOps = append([]device.Op{coalesce}, t.handOff(unique)...)
		p.ops = append(p.ops, device.Op{Name: OpApply, Kind: device.Write, Bytes: apply.BytesRead + apply.BytesWritten})
		ScatterBytes.Set(b, apply.BytesWritten)
		p.lap(PrimScatter)
	default:
		scatter, err := t.set.Kernel.Scatter(ctx, &kernel.ScatterRequest{
			Tables: p.tables, Bags: p.bags, Reduce: t.reduce, Grads: p.step.PooledGrad,
			Optimizer: t.opt, LearningRate: float32(t.cfg.LearningRate), Epsilon: float32(t.set.Graph.Embedding.Epsilon),
		})
		if err != nil {
			return fmt.Errorf("scatter: %w", err)
		}
		p.lap(PrimScatter)
		if p.pl != nil {
			t.restore(p.pl)
		}
		if err := t.storeLow(ctx, p); err != nil {
			return err
		}
		p.ops = append(p.ops, device.Op{Name: "scatter", Kind: device.Write, Bytes: scatter.BytesRead + scatter.BytesWritten})
		ScatterBytes.Set(b, scatter.BytesWritten)
	}
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
	slots, err := batch.Slots.View(b)
	if err != nil {
		return err
	}
	ids, err := batch.IDs.View(b)
	if err != nil {
		return err
	}
	start := t.set.Layout.IndexStart()
	var bypassed []int64
	for tab := range t.set.Layout.Tables {
		lo, hi := start[tab], start[tab+1]
		if err := hz.ReadSlots(b.Seq, string(hazard.Train), tab, slots[lo:hi]); err != nil {
			return err
		}
		bypassed = bypassed[:0]
		for i := lo; i < hi; i++ {
			if slots[i] < 0 {
				bypassed = append(bypassed, ids[i])
			}
		}
		if err := hz.ReadRows(b.Seq, string(hazard.Train), tab, bypassed); err != nil {
			return err
		}
	}
	return nil
}

// Close removes the scratch regions.
func (t *trainer) Close(context.Context) error {
	var errs []error
	for _, r := range []*region.Region{t.scratchIdx, t.scratchRows, t.castScratch, t.scratchList} {
		if r != nil {
			errs = append(errs, r.Close())
		}
	}
	errs = append(errs, t.mapper.Close())
	return errors.Join(errs...)
}

func (t *trainer) keepScores(b *batch.Batch) error {
	scores, labels, err := batch.Outcomes(b, t.set.Layout.BatchSize)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.scores = append(t.scores, scores...)
	t.labels = append(t.labels, labels...)
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
	t.set.Metrics.Set("accuracy", e.Accuracy)
	t.set.Metrics.Set("eval_samples", float64(len(t.scores)))
	return nil
}

// create builds a train stage from its decoded config (NewFactory).
func create(_ context.Context, set stage.Settings, c *Config) (any, error) {
	if c.Source == SourceStorage && set.Storage == nil {
		return nil, errors.New("train with source: storage needs the run's Storage (and collect and insert upstream)")
	}
	t, err := newTrainer(set, c)
	if err != nil {
		return nil, err
	}
	if err := t.checkStaleness(); err != nil {
		return nil, err
	}
	if c.Staleness > 0 {
		return staleTrainer{t}, nil
	}
	return t, nil
}
