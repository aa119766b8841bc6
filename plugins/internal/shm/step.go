package shm

import (
	"fmt"

	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// Step is a model step request's arrays, checked and typed.
type Step struct {
	Batch      int
	Pooled     []float32 // [table][sample][dim]
	Dense      []float32 // [sample][dense]
	Labels     []float32 // each in [0, 1]
	PooledGrad []float32 // nil unless training
	Scores     []float32 // nil unless asked for
}

// StepArrays checks req against a model whose samples have pooledWidth
// pooled floats (all tables) and dense dense features, and returns its
// arrays. Every model plugin validates a step the same way.
func StepArrays(m *region.Mapper, req *model.StepRequest, pooledWidth, dense int64) (*Step, error) {
	if req.Batch < 1 {
		return nil, fmt.Errorf("%w: batch size must be ≥ 1, got %d", plugin.ErrInvalidRequest, req.Batch)
	}
	B := int64(req.Batch)
	s := &Step{Batch: req.Batch}
	var err error
	if s.Pooled, err = Float32s(m, req.Pooled, B*pooledWidth, "pooled"); err != nil {
		return nil, err
	}
	if s.Dense, err = Float32s(m, req.Dense, B*dense, "dense"); err != nil {
		return nil, err
	}
	if s.Labels, err = Float32s(m, req.Labels, B, "labels"); err != nil {
		return nil, err
	}
	for i, y := range s.Labels {
		if !(y >= 0 && y <= 1) {
			return nil, fmt.Errorf("%w: label %d is %v, want a value in [0, 1]", plugin.ErrInvalidRequest, i, y)
		}
	}
	if req.Train {
		if s.PooledGrad, err = Float32s(m, req.PooledGrad, B*pooledWidth, "pooled_grad"); err != nil {
			return nil, err
		}
	}
	if s.Scores, err = OptionalFloat32s(m, req.Scores, B, "scores"); err != nil {
		return nil, err
	}
	return s, nil
}
