// Package model is the SDK for model plugins: the dense part of a
// recommendation model (MLPs, feature interaction, loss), which owns its
// dense parameters and their optimizer state. Embedding rows are not the
// model's: it sees pooled embeddings and returns their gradient.
//
// StepRequest.View checks a step against the run's Setup and maps its
// arrays as typed slices, refusing a malformed request with
// plugin.ErrInvalidRequest before the model touches its parameters;
// Batches wraps it with the rest of a Step's preamble, and DecodeConfig
// and NewInfo are the usual first lines of Configure and Info. The
// arithmetic the built-in models share is in modelmath.
package model

import (
	"context"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// StepRequest is one batch through the dense model.
type StepRequest struct {
	Seq   uint64
	Batch int
	// Pooled is float32 [table][sample][dim], the pooled embeddings.
	Pooled region.Ref
	// Dense is float32 [sample][Setup.DenseFeatures].
	Dense region.Ref
	// Labels is float32 [sample], 0 or 1.
	Labels region.Ref
	// Train updates the dense parameters and writes PooledGrad; otherwise
	// the step is forward only (scoring, evaluation).
	Train bool
	// PooledGrad (out, when Train) is float32 [table][sample][dim]: the
	// gradient of the mean batch loss with respect to Pooled.
	PooledGrad region.Ref
	// Scores (out, optional) is float32 [sample]: predicted probabilities.
	Scores region.Ref
}

// StepResult reports one step.
type StepResult struct {
	// Loss is the mean loss of the batch (binary cross-entropy).
	Loss float64
	// FLOPs counts the dense floating-point operations of the step.
	FLOPs int64
	// Layers optionally lists the forward pass's dense matrix products,
	// in order, each M samples × K inputs × N outputs: what a host passes
	// on as device.Op.Layers to a device whose time depends on the shapes
	// (a systolic array's tiling) rather than on FLOPs alone. Products
	// without a weight matrix of the model's (DLRM's dot interaction) are
	// not layers. Empty: the host prices FLOPs. Added after the first
	// release: older plugins never set it.
	Layers []device.Layer
}

// Model is a dense model.
type Model interface {
	plugin.Base
	Step(ctx context.Context, req *StepRequest) (*StepResult, error)
	// Digest is a sha256 over the dense parameters and their optimizer
	// state in canonical order.
	Digest(ctx context.Context) ([]byte, error)
}
