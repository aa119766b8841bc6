// Package kernel is the SDK for kernel plugins: the embedding operators a
// training or inference step runs over tables held in shared-memory regions.
//
// Every call covers one batch and all tables. A kernel need not implement
// every operator: Info.Ops lists the ones it does, and the others return
// plugin.ErrUnsupported.
package kernel

import (
	"context"

	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// Operator names, as listed in plugin.Info.Ops.
const (
	OpGatherReduce = "gather-reduce"
	OpScatter      = "scatter"
)

// Reduce is how a bag of rows is pooled.
type Reduce int32

const (
	// Sum adds the rows of a bag.
	Sum Reduce = iota
	// Mean averages the rows of a bag (an empty bag pools to zeros).
	Mean
)

// Optimizer is the sparse optimizer Scatter applies.
type Optimizer int32

const (
	// SGD is plain stochastic gradient descent: row -= lr * grad.
	SGD Optimizer = iota
)

// Table is an embedding table in a region: Rows rows of Dim float32 each,
// row-major.
type Table struct {
	Data region.Ref
	Rows int64
	Dim  int
}

// Bags are the lookups of one batch for all tables, CSR style. Indices are
// int64 row numbers (into the table the request names for that position),
// table after table; Offsets has, for each table, Batch+1 int64 entries
// relative to that table's start in Indices, so table t's bag b is
// Indices[IndexStart[t]+Offsets[t*(Batch+1)+b] : ...+Offsets[t*(Batch+1)+b+1]].
type Bags struct {
	Batch      int
	Indices    region.Ref
	IndexStart []int64
	Offsets    region.Ref
}

// GatherReduceRequest pools the rows of every bag of every table.
type GatherReduceRequest struct {
	Tables []Table
	Bags   Bags
	Reduce Reduce
	// Out receives float32 [table][bag][dim].
	Out region.Ref
}

// ScatterRequest applies pooled-output gradients to the rows that were
// pooled: each row of a bag receives the bag's gradient (divided by the bag
// size under Mean), and duplicates accumulate in (row, position) order.
type ScatterRequest struct {
	Tables []Table
	Bags   Bags
	Reduce Reduce
	// Grads is float32 [table][bag][dim], the gradient of the loss with
	// respect to each pooled output.
	Grads        region.Ref
	Optimizer    Optimizer
	LearningRate float32
}

// Result reports what a call did, for the cost model and the trace.
type Result struct {
	// BytesRead and BytesWritten count table and array bytes touched.
	BytesRead    int64
	BytesWritten int64
	// FLOPs counts floating-point operations.
	FLOPs int64
}

// Kernel runs embedding operators.
type Kernel interface {
	plugin.Base
	GatherReduce(ctx context.Context, req *GatherReduceRequest) (*Result, error)
	Scatter(ctx context.Context, req *ScatterRequest) (*Result, error)
}
