package model

import (
	"context"
	"fmt"

	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
	"github.com/flowrun/flowrun/sdk/region/checked"
)

// Step is a StepRequest's arrays, mapped from shared memory and checked by
// StepRequest.View. PooledGrad and Scores are the host's memory: a model
// writes its answers into them directly.
type Step struct {
	// Batch is the number of samples.
	Batch int
	// Pooled is [table][sample][dim]: table t's block starts at
	// Batch·(Σ dims of the tables before t).
	Pooled []float32
	// Dense is [sample][Setup.DenseFeatures].
	Dense []float32
	// Labels is [sample], each in [0, 1].
	Labels []float32
	// PooledGrad is laid out as Pooled; nil unless the step trains.
	PooledGrad []float32
	// Scores is [sample]; nil unless the host asked for them.
	Scores []float32
}

// PooledWidth is the pooled floats of one sample of a run with these
// tables: the sum of their dims.
func PooledWidth(tables []plugin.Table) int64 {
	var w int64
	for _, t := range tables {
		w += int64(t.Dim)
	}
	return w
}

// View checks req against the run's Setup (its tables' dims and
// DenseFeatures) and maps its arrays through m:
//
//   - Batch is at least 1;
//   - Pooled, Dense and Labels are present, aligned and hold Batch samples
//     (Pooled: PooledWidth floats each, Dense: DenseFeatures);
//   - every label is in [0, 1];
//   - PooledGrad, when the step trains, is laid out as Pooled; Scores, when
//     present, holds Batch floats.
//
// Every error wraps plugin.ErrInvalidRequest and names the batch. View
// writes nothing, so a model that calls it before changing its parameters
// leaves them as they were when a request is refused.
func (req *StepRequest) View(m *region.Mapper, setup plugin.Setup) (*Step, error) {
	if req == nil {
		return nil, fmt.Errorf("%w: nil step request", plugin.ErrInvalidRequest)
	}
	s, err := req.view(m, PooledWidth(setup.Tables), int64(setup.DenseFeatures))
	if err != nil {
		return nil, fmt.Errorf("batch %d: %w", req.Seq, err)
	}
	return s, nil
}

func (req *StepRequest) view(m *region.Mapper, width, dense int64) (*Step, error) {
	if req.Batch < 1 {
		return nil, fmt.Errorf("%w: batch size must be ≥ 1, got %d", plugin.ErrInvalidRequest, req.Batch)
	}
	B := int64(req.Batch)
	s := &Step{Batch: req.Batch}
	var err error
	if s.Pooled, err = checked.Float32s(m, req.Pooled, B*width, "pooled"); err != nil {
		return nil, err
	}
	if s.Dense, err = checked.Float32s(m, req.Dense, B*dense, "dense"); err != nil {
		return nil, err
	}
	if s.Labels, err = checked.Float32s(m, req.Labels, B, "labels"); err != nil {
		return nil, err
	}
	for i, y := range s.Labels {
		if !(y >= 0 && y <= 1) {
			return nil, fmt.Errorf("%w: label %d is %v, want a value in [0, 1]", plugin.ErrInvalidRequest, i, y)
		}
	}
	if req.Train {
		if s.PooledGrad, err = checked.Float32s(m, req.PooledGrad, B*width, "pooled_grad"); err != nil {
			return nil, err
		}
	}
	if !req.Scores.IsZero() {
		if s.Scores, err = checked.Float32s(m, req.Scores, B, "scores"); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Batches is a model's side of the run's step requests: the Setup it was
// configured with and the mapper of the host's shared-memory regions. A
// model embeds it, calls Configured at the end of a successful Configure
// and Open first in every Step (under its own lock: Batches has none).
type Batches struct {
	mapper region.Mapper
	setup  *plugin.Setup
}

// Configured records the run's Setup, which Open checks requests against.
func (b *Batches) Configured(setup plugin.Setup) { b.setup = &setup }

// IsConfigured reports whether Configured was called.
func (b *Batches) IsConfigured() bool { return b.setup != nil }

// Open is the preamble of a Step: plugin.ErrNotConfigured before
// Configured, the context's error once it is done, else req's arrays
// (StepRequest.View).
func (b *Batches) Open(ctx context.Context, req *StepRequest) (*Step, error) {
	if b.setup == nil {
		return nil, plugin.ErrNotConfigured
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return req.View(&b.mapper, *b.setup)
}
