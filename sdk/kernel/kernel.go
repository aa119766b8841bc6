// Package kernel is the SDK for kernel plugins: the embedding operators a
// training or inference step runs over tables held in shared-memory regions.
//
// Every call covers one batch and all tables. A kernel need not implement
// every operator: Info.Ops lists the ones it does, and the others return
// plugin.ErrUnsupported.
//
// Each request's View checks it (shapes, offsets, every index a row of its
// table, refs present, long enough and aligned) and maps its arrays as
// typed slices, refusing a malformed request with plugin.ErrInvalidRequest
// before the kernel reads or writes anything: a kernel calls it first.
package kernel

import (
	"context"
	"fmt"
	"strings"

	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// Operator names, as listed in plugin.Info.Ops.
const (
	OpGatherReduce = "gather-reduce"
	// OpScatter is the fused sparse update: expand-coalesce, then apply.
	OpScatter = "scatter"
	// OpExpandCoalesce and OpApply are Scatter's two halves as separate
	// calls, for designs that move or cast the coalesced gradients between
	// them (and for benchmarking each half).
	OpExpandCoalesce = "expand-coalesce"
	OpApply          = "apply"
)

// Reduce is how a bag of rows is pooled.
type Reduce int32

const (
	// Sum adds the rows of a bag.
	Sum Reduce = iota
	// Mean averages the rows of a bag (an empty bag pools to zeros).
	Mean
)

var reduceNames = []string{Sum: "sum", Mean: "mean"}

func (r Reduce) String() string {
	if r >= 0 && int(r) < len(reduceNames) {
		return reduceNames[r]
	}
	return fmt.Sprintf("reduce(%d)", int32(r))
}

// ParseReduce reads a pooling's name: "sum" or "mean".
func ParseReduce(s string) (Reduce, error) {
	for r, name := range reduceNames {
		if strings.EqualFold(s, name) {
			return Reduce(r), nil
		}
	}
	return 0, fmt.Errorf("must be %s, got %q", strings.Join(reduceNames, " or "), s)
}

// Optimizer is the sparse optimizer Scatter and Apply use. Its state, if
// any, lives in the row itself (floats [Dim, Stride) of the row, see Table),
// so it moves wherever the row is copied: a cache slot updates exactly as
// the home row would.
//
// Every kernel rounds each operation to float32 in the order written below
// (no fused multiply-add), so that updates are bit-identical across kernels
// and machines; g is the row's coalesced gradient.
type Optimizer int32

const (
	// SGD is plain stochastic gradient descent: w -= lr·g. No state.
	SGD Optimizer = iota
	// Adagrad keeps Dim floats G per row: G += g²; w -= lr·g / (sqrt(G)+ε).
	Adagrad
	// RowWiseAdagrad keeps one float G per row: G += mean over the row of
	// g², w -= lr·g / (sqrt(G)+ε). The squares are summed in eight partial
	// sums (g[d]² into partial d mod 8, in increasing d), combined as
	// ((p0+p4)+(p2+p6)) + ((p1+p5)+(p3+p7)) (a horizontal add of one 8-lane
	// vector), and the total is divided by Dim.
	RowWiseAdagrad
)

var optimizerNames = []string{SGD: "sgd", Adagrad: "adagrad", RowWiseAdagrad: "rowwise_adagrad"}

func (o Optimizer) String() string {
	if o >= 0 && int(o) < len(optimizerNames) {
		return optimizerNames[o]
	}
	return fmt.Sprintf("optimizer(%d)", int32(o))
}

// ParseOptimizer reads an optimizer's name: "sgd", "adagrad" or
// "rowwise_adagrad".
func ParseOptimizer(s string) (Optimizer, error) {
	for o, name := range optimizerNames {
		if strings.EqualFold(s, name) {
			return Optimizer(o), nil
		}
	}
	return 0, fmt.Errorf("unknown optimizer %q (want %s)", s, strings.Join(optimizerNames, ", "))
}

// StateFloats is how many float32s of optimizer state o keeps per row of
// dim floats: 0 for SGD, dim for Adagrad, 1 for RowWiseAdagrad. A table
// trained with o needs Stride ≥ Dim + StateFloats(o, Dim).
func StateFloats(o Optimizer, dim int) int {
	switch o {
	case Adagrad:
		return dim
	case RowWiseAdagrad:
		return 1
	}
	return 0
}

// Table is an embedding table in a region: Rows rows, row-major, each
// Stride float32s apart. Floats [0, Dim) of a row are its embedding; floats
// [Dim, Stride) hold the row's optimizer state (see Optimizer), so the
// state travels with the row wherever the row is copied.
//
// A compact table (Index set) stores only the rows it was asked to, in
// the order they came, so that memory is paid by the row: Index is a
// region of Rows int32s, and row r lies at position Index[r]−1 of Data
// (0: the row is not stored, and no request may name it). Every kernel
// must honour Index: the SDK's views (GatherReduceRequest.View and the
// others) translate a request's rows into positions, so a kernel that
// works on its views does. A table without Index is row-major as above.
type Table struct {
	Data region.Ref
	Rows int64
	Dim  int
	// Stride is the float32s per row, ≥ Dim; 0 means Dim (no state).
	Stride int
	// Index, when set, maps rows to positions in Data (a compact table).
	Index region.Ref
}

// RowStride is t's stride in float32s: Stride, or Dim when Stride is 0.
func (t Table) RowStride() int {
	if t.Stride == 0 {
		return t.Dim
	}
	return t.Stride
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
	// Epsilon is Adagrad's ε (ignored by SGD).
	Epsilon float32
}

// ExpandCoalesceRequest is the first half of Scatter (Tensor Casting's
// Alg. 1): each bag's gradient is expanded to every row the bag pooled
// (divided by the bag size under Mean), and the expanded gradients of each
// row are summed in position order. The tables' rows are not touched; only
// their Rows and Dim are read.
type ExpandCoalesceRequest struct {
	Tables []Table
	Bags   Bags
	Reduce Reduce
	// Grads is float32 [table][bag][dim], as in ScatterRequest.
	Grads region.Ref
	// Out receives the coalesced rows and gradients; its Counts is ignored.
	Out Coalesced
}

// Coalesced is the output of ExpandCoalesce and the input of Apply: for
// each table, its unique rows in ascending order (int64) and their summed
// gradients (float32 [unique][Dim]). Table t's rows are at entries
// [RowStart[t], RowStart[t]+Counts[t]) of Rows and its gradients at float32s
// [GradStart[t], GradStart[t]+Counts[t]·Dim) of Grads. ExpandCoalesce needs
// room for as many rows as the table has lookups; CoalescedLayout computes
// a packed layout.
type Coalesced struct {
	Rows      region.Ref
	Grads     region.Ref
	RowStart  []int64
	GradStart []int64
	// Counts is each table's number of unique rows: returned by
	// ExpandCoalesce, given to Apply.
	Counts []int64
}

// CoalescedLayout packs the blocks of tables with room for capacity[t]
// rows each (at most the table's lookups in a batch), table after table.
// It returns the starts for Coalesced and the bytes Rows and Grads need.
func CoalescedLayout(tables []Table, capacity []int64) (rowStart, gradStart []int64, rowBytes, gradBytes int64) {
	rowStart = make([]int64, len(tables))
	gradStart = make([]int64, len(tables))
	var rows, floats int64
	for t, tab := range tables {
		rowStart[t], gradStart[t] = rows, floats
		rows += capacity[t]
		floats += capacity[t] * int64(tab.Dim)
	}
	return rowStart, gradStart, 8 * rows, 4 * floats
}

// CoalesceResult is what ExpandCoalesce did, and the unique rows per table.
type CoalesceResult struct {
	Result
	Counts []int64
}

// ApplyRequest is the second half of Scatter: the optimizer update of each
// coalesced row, once per unique row.
type ApplyRequest struct {
	Tables       []Table
	Coalesced    Coalesced
	Optimizer    Optimizer
	LearningRate float32
	// Epsilon is Adagrad's ε (ignored by SGD).
	Epsilon float32
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
	// Scatter is ExpandCoalesce followed by Apply in one call.
	Scatter(ctx context.Context, req *ScatterRequest) (*Result, error)
	ExpandCoalesce(ctx context.Context, req *ExpandCoalesceRequest) (*CoalesceResult, error)
	Apply(ctx context.Context, req *ApplyRequest) (*Result, error)
}
