package train

import (
	"context"
	"fmt"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/region"
)

// The values of Backward.
const (
	// BackwardCoalesce coalesces with expand-coalesce (Tensor Casting's
	// Alg. 1), fused with the optimizer update in the kernel's Scatter.
	BackwardCoalesce = "coalesce"
	// BackwardCast reads the cast stage's casted index (Alg. 2) and
	// coalesces with a plain gather-reduce over the gradient table
	// (Alg. 3), then applies the optimizer once per unique row.
	BackwardCast = "cast"
)

// unfused runs the backward coalescing and the optimizer update as two
// kernel calls, so that each is charged where it runs: the casted
// gather-reduce (backward: cast) or expand-coalesce, then apply. It
// returns the coalescing's device op, the update's result and the number
// of coalesced rows.
func (t *trainer) unfused(ctx context.Context, b *batch.Batch, tables []kernel.Table, bags kernel.Bags, grads region.Ref, lap func(batch.Stat)) (device.Op, *kernel.Result, int64, error) {
	lookups, err := t.lookups(b)
	if err != nil {
		return device.Op{}, nil, 0, err
	}
	if t.cfg.Backward == BackwardCast {
		apply, unique, err := t.castBackward(ctx, b, tables, grads, lap)
		if err != nil {
			return device.Op{}, nil, 0, err
		}
		CoalescedRows.Set(b, unique)
		return device.Op{Name: "cast-gather-reduce", Kind: device.Read, Bytes: t.castGatherReduceBytes(lookups, unique)}, apply, unique, nil
	}
	ec, apply, err := t.coalesceApply(ctx, tables, bags, grads, lap)
	if err != nil {
		return device.Op{}, nil, 0, err
	}
	unique := total(ec.Counts)
	return device.Op{Name: "expand-coalesce", Kind: device.Read, Bytes: t.expandCoalesceBytes(lookups, unique)}, apply, unique, nil
}

// castBackward is Alg. 3 and the update after it. The casted index is a
// set of bags: unique row u of table t is a "bag" whose indices are the
// batch bags (rows of the gradient table) that looked it up, in forward
// position order (the cast stage sorted stably). So the coalesced gradient
// is GatherReduce with the pooled gradients as the table and the casted
// pairs as the bags, on the forward pass's pooling loop, summing each row's
// gradients from +0 in (row, position) order, the order expand-coalesce
// sums them in: the update is bit-identical to Scatter's.
//
// Every table's casted bags are padded with empty bags up to the batch's
// largest unique count, since Bags has one batch size for all tables; the
// padding pools to zeros that Apply never reads.
func (t *trainer) castBackward(ctx context.Context, b *batch.Batch, tables []kernel.Table, grads region.Ref, lap func(batch.Stat)) (apply *kernel.Result, unique int64, err error) {
	l := t.set.Layout
	T, B := l.Tables, int64(l.BatchSize)
	offsets, err := batch.Offsets.View(b)
	if err != nil {
		return nil, 0, err
	}
	castDst, err := batch.CastDst.View(b)
	if err != nil {
		return nil, 0, err
	}
	srcRef, err := batch.CastSrc.Ref(b)
	if err != nil {
		return nil, 0, err
	}
	rowsRef, err := batch.CastRows.Ref(b)
	if err != nil {
		return nil, 0, err
	}
	if err := t.ensureCastScratch(); err != nil {
		return nil, 0, err
	}
	start := l.IndexStart()[:T]
	counts := make([]int64, T)
	var maxU int64
	for tab := range T {
		off := offsets[int64(tab)*(B+1) : int64(tab+1)*(B+1)]
		if n := off[B] - off[0]; n > 0 {
			counts[tab] = castDst[start[tab]+off[B]-1] + 1
		}
		maxU = max(maxU, counts[tab])
	}
	// The casted offsets: bag u of table t starts where castDst first
	// reaches u (castDst is a running count, so each u is one run).
	coffBytes := 8 * int64(T) * (maxU + 1)
	coff := region.Int64s(t.castScratch.Bytes()[:coffBytes])
	for tab := range T {
		off := offsets[int64(tab)*(B+1) : int64(tab+1)*(B+1)]
		c := coff[int64(tab)*(maxU+1) : int64(tab+1)*(maxU+1)]
		u := int64(0)
		for j := off[0]; j < off[B]; j++ {
			if d := castDst[start[tab]+j]; j == off[0] || d != castDst[start[tab]+j-1] {
				if d != u {
					return nil, 0, fmt.Errorf("batch %d: table %d: casted dst %d at %d, want %d (is a cast stage upstream?)", b.Seq, tab, d, j, u)
				}
				c[u] = j
				u++
			}
		}
		for ; u <= maxU; u++ {
			c[u] = off[B]
		}
	}
	cr := t.castScratch.Ref()
	gradTables := make([]kernel.Table, T)
	gradStart := make([]int64, T)
	for tab := range T {
		n := 4 * B * int64(l.Dim)
		gradTables[tab] = kernel.Table{Data: grads.Sub(int64(tab)*n, n), Rows: B, Dim: l.Dim}
		gradStart[tab] = int64(tab) * maxU * int64(l.Dim)
	}
	out := cr.Sub(t.castGradsAt, 4*int64(T)*maxU*int64(l.Dim))
	_, err = t.set.Kernel.GatherReduce(ctx, &kernel.GatherReduceRequest{
		Tables: gradTables,
		Bags:   kernel.Bags{Batch: int(maxU), Indices: srcRef, IndexStart: start, Offsets: cr.Sub(0, coffBytes)},
		Reduce: kernel.Sum, Out: out,
	})
	if err != nil {
		return nil, 0, fmt.Errorf("casted gather-reduce: %w", err)
	}
	lap(PrimBackward)
	apply, err = t.set.Kernel.Apply(ctx, &kernel.ApplyRequest{
		Tables:    tables,
		Coalesced: kernel.Coalesced{Rows: rowsRef, Grads: out, RowStart: start, GradStart: gradStart, Counts: counts},
		Optimizer: t.opt, LearningRate: float32(t.cfg.LearningRate), Epsilon: float32(t.set.Graph.Embedding.Epsilon),
	})
	if err != nil {
		return nil, 0, fmt.Errorf("apply: %w", err)
	}
	return apply, total(counts), nil
}

// ensureCastScratch creates, on first need, the region that holds the
// casted offsets (room for every lookup to be a distinct row, per table)
// and, after them, the coalesced gradients.
func (t *trainer) ensureCastScratch() error {
	if t.castScratch != nil {
		return nil
	}
	l := t.set.Layout
	ids := int64(l.Tables) * int64(l.IDsPerTable)
	t.castGradsAt = (8*(ids+int64(l.Tables)) + 63) &^ 63
	r, err := region.Create("train-cast", t.castGradsAt+4*ids*int64(l.Dim))
	if err != nil {
		return fmt.Errorf("train cast scratch: %w", err)
	}
	t.castScratch = r
	return nil
}

// coalesceApply is Scatter as its two kernel calls, expand-coalesce then
// apply, for graphs that charge coalescing to another device than the
// update (a near-memory design that coalesces on the host, TensorDIMM-like).
// The kernels make the pair bit-identical to the fused Scatter.
func (t *trainer) coalesceApply(ctx context.Context, tables []kernel.Table, bags kernel.Bags, grads region.Ref, lap func(batch.Stat)) (ec *kernel.CoalesceResult, apply *kernel.Result, err error) {
	if err := t.ensureCastScratch(); err != nil {
		return nil, nil, err
	}
	l := t.set.Layout
	capacity := make([]int64, l.Tables)
	for tab := range capacity {
		capacity[tab] = int64(l.IDsPerTable)
	}
	rowStart, gradStart, rowBytes, gradBytes := kernel.CoalescedLayout(tables, capacity)
	cr := t.castScratch.Ref()
	out := kernel.Coalesced{Rows: cr.Sub(0, rowBytes), Grads: cr.Sub(t.castGradsAt, gradBytes), RowStart: rowStart, GradStart: gradStart}
	ec, err = t.set.Kernel.ExpandCoalesce(ctx, &kernel.ExpandCoalesceRequest{Tables: tables, Bags: bags, Reduce: t.reduce, Grads: grads, Out: out})
	if err != nil {
		return nil, nil, fmt.Errorf("expand-coalesce: %w", err)
	}
	lap(PrimBackward)
	out.Counts = ec.Counts
	apply, err = t.set.Kernel.Apply(ctx, &kernel.ApplyRequest{
		Tables: tables, Coalesced: out,
		Optimizer: t.opt, LearningRate: float32(t.cfg.LearningRate), Epsilon: float32(t.set.Graph.Embedding.Epsilon),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("apply: %w", err)
	}
	return ec, apply, nil
}

// The per-primitive batch stats, wall (prim_*_ns) and modeled
// (modeled_prim_*_ns), for Tensor Casting's Fig. 12 breakdown: forward
// gather-reduce, backward coalescing (expand-coalesce, or casted
// gather-reduce; 0 when fused into scatter), scatter (the optimizer update,
// Fig. 12's "gradient scatter", with the fused coalescing when there is no
// separate step) and the dense model (MLP). Transfers are modeled only.
// The casting step (Fig. 12's red bar) is the cast stage's own primitive.
var (
	PrimGather   = batch.NewStat("prim_gather_ns")
	PrimBackward = batch.NewStat("prim_backward_ns")
	PrimScatter  = batch.NewStat("prim_scatter_ns")
	PrimMLP      = batch.NewStat("prim_mlp_ns")
)

// OpApply is the device op of the optimizer update when it is a kernel
// call of its own (the kernel's Apply, after a casted gather-reduce or an
// unfused expand-coalesce). It is not "scatter": a device's
// op_efficiency.scatter (calibrated, docs/devices.md) prices the fused
// expand-coalesce and update, whose sort and expanded gradients the
// update alone does not have; the update is priced like any other row
// read and write of its device.
const OpApply = "apply"

// OpTrainStep is the op every training batch charges to the compute
// device for the training framework's fixed cost per step (dispatch,
// kernel launches, synchronisation): no bytes and no FLOPs, so it costs
// only what the device's op_overhead_ms says (docs/devices.md,
// "Calibration").
const OpTrainStep = "train-step"

// primOf names the primitive a charged op belongs to. The update is the
// scatter primitive however it is charged, so that Fig. 12's breakdown has
// the same bars for every graph.
var primOf = map[string]string{
	"gather-reduce": "gather", "cast-gather-reduce": "backward", "expand-coalesce": "backward",
	"scatter": "scatter", OpApply: "scatter", "mlp": "mlp", OpTrainStep: "step",
	"pooled-to-device": "transfer", "grads-to-host": "transfer", "coalesced-to-update": "transfer",
}

// charge charges ops to d (the graph's device name) and adds each op's
// modeled time to its primitive's modeled_prim_*_ns stat and the total to
// the device's modeled_dev_*_ns.
func (t *trainer) charge(ctx context.Context, b *batch.Batch, name string, d device.Device, ops []device.Op) (int64, error) {
	each, err := stage.ChargeEach(ctx, b, name, d, ops...)
	if err != nil {
		return 0, err
	}
	var sum int64
	for i, ns := range each {
		sum += ns
		if p, ok := primOf[ops[i].Name]; ok {
			batch.NewStat("modeled_prim_"+p+"_ns").Add(b, ns)
		}
	}
	return sum, nil
}

// backName is the graph's name of the device coalescing is charged to.
func (t *trainer) backName() string {
	if t.cfg.BackwardDevice != "" {
		return t.cfg.BackwardDevice
	}
	return t.cfg.HostDevice
}

// expandCoalesceBytes is the memory traffic charged for Alg. 1 as the
// paper's baseline runs it: the traffic its Fig. 6 counts for expand and
// coalesce ("around 3× higher memory traffic than embedding
// gather-reduce", Sec. III-C) plus the sort that Fig. 6 leaves out but
// the time includes ("the sorting step ... adds additional computation
// overhead", ibid.):
//
//   - expand: the bag gradients read, one gradient row per lookup written;
//   - sort (Alg. 1 lines 4–5, ArgSort and Sort of src): src read, the
//     radix passes over 8-byte (row, position) keys, the sorted positions
//     and rows written, the same sort-by-key the cast stage is charged
//     for (Alg. 2 step 1);
//   - accumulate (lines 8–17): each expanded row read once, at its sorted
//     position, and one row per unique row written with its row id.
//
// flowrun's CPU kernel fuses these steps and never materialises the
// expanded rows (its measured wall time shows that); the modeled figure
// is the algorithm's, so that the casted gather-reduce (which reads each
// lookup's gradient once and writes the unique rows) is compared with
// what it replaces.
func (t *trainer) expandCoalesceBytes(lookups, unique int64) int64 {
	l := t.set.Layout
	row := 4 * int64(l.Dim)
	n := lookups
	expand := int64(l.Tables)*int64(l.BatchSize)*row + n*row
	sort := 8*n + int64(t.sortPasses())*2*8*n + 16*n
	accumulate := n*row + unique*(row+8)
	return expand + sort + accumulate
}

// castGatherReduceBytes is the memory traffic of Alg. 3 over the casted
// index: the casted src (a bag number per lookup) and each unique row's
// offset read, one gradient row read per lookup, one coalesced row written
// per unique row. The kernel pads every table's casted bags to the
// batch's largest unique count (see castBackward) and writes zeros there;
// that padding is flowrun's, not the algorithm's, and is not charged.
func (t *trainer) castGatherReduceBytes(lookups, unique int64) int64 {
	l := t.set.Layout
	row := 4 * int64(l.Dim)
	return lookups*(8+row) + 8*(unique+int64(l.Tables)) + unique*row
}

// handOff is the coalesced gradients' way from the device that coalesces
// them to the one that applies them, where the two differ: Baseline(NMP)
// of Tensor Casting's Sec. VI coalesces on the host CPU ("gradient
// expand-coalesce being executed identically as baseline CPU-centric
// system") and scatters near memory, so each unique row's coalesced
// gradient and row ID cross the coalescing device's link. The paper does
// not name that link; the backward device's own is charged.
func (t *trainer) handOff(unique int64) []device.Op {
	if t.cfg.BackwardDevice == "" || t.cfg.BackwardDevice == t.cfg.HostDevice {
		return nil
	}
	row := 4 * int64(t.set.Layout.Dim)
	return []device.Op{{Name: "coalesced-to-update", Kind: device.Transfer, Bytes: unique * (row + 8)}}
}

// total sums per-table counts.
func total(counts []int64) int64 {
	var n int64
	for _, c := range counts {
		n += c
	}
	return n
}

// sortPasses is the radix passes of a sort by row over the dataset's rows
// in 11-bit digits (2²² rows take two), as the cast stage counts them for
// its sort-by-key: the two stages must not import each other, and
// expand-coalesce's sort is the same sort.
func (t *trainer) sortPasses() int {
	rows := int64(1 << 22)
	if t.set.Graph != nil && t.set.Graph.Dataset.MaxRows() > 0 {
		rows = t.set.Graph.Dataset.MaxRows()
	}
	return kernel.SortPasses(rows)
}

// lookups is the batch's lookups over all tables, from its bag offsets.
func (t *trainer) lookups(b *batch.Batch) (int64, error) {
	offsets, err := b.Int64s(batch.Offsets)
	if err != nil {
		return 0, err
	}
	l := t.set.Layout
	B := int64(l.BatchSize)
	var n int64
	for tab := range int64(l.Tables) {
		off := offsets[tab*(B+1) : (tab+1)*(B+1)]
		n += off[B] - off[0]
	}
	return n, nil
}
