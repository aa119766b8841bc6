// Package cpu is the embedding kernel on the host CPU:
//
//   - GatherReduce pools each bag's rows (sum or mean). Its hot loop is
//     AVX2 assembly that prefetches rows a fixed number of lookups ahead
//     (gather_amd64.s), chosen at run time by CPU feature detection, with a
//     pure-Go fallback that gives the same bits.
//   - ExpandCoalesce is Tensor Casting's Alg. 1: each bag's gradient is
//     expanded to every row it pooled, the expanded lookups are radix-sorted
//     by row, and the gradients of equal rows are summed.
//   - Apply updates each coalesced row once with SGD, Adagrad or row-wise
//     Adagrad, whose state lives in the row (kernel.Table.Stride).
//   - Scatter is ExpandCoalesce and Apply fused, one table per goroutine.
//
// The floating-point order is canonical, because flowrun's exactness test
// compares model digests across caches and pipelines that place rows in
// different memories: a bag is accumulated in bag order, and gradients are
// coalesced in (row, position) order, where position is the lookup's place
// in the table's index array. A row's update therefore depends only on the
// lookups that name it, not on the row's number, so a row updated in a
// cache slot ends with the same bits as in its home table.
//
// Tables are independent, so they may run on separate goroutines without
// changing a single bit; when the request's regions overlap (so one table's
// writes could be another's reads) the tables run one after another instead.
//
// It imports only sdk/ (no internal/ package).
package cpu

import (
	"context"
	"fmt"
	"sync"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// Name is the kernel's plugin name (builtin:cpu).
const Name = "cpu"

// Version is this plugin's version.
const Version = "0.1.0"

type cpuKernel struct {
	mu         sync.Mutex
	mapper     region.Mapper
	configured bool
	cfg        Config
}

// New returns the CPU kernel.
func New() kernel.Kernel { return &cpuKernel{} }

func (k *cpuKernel) Info(context.Context) (plugin.Info, error) {
	info := plugin.NewInfo(plugin.KindKernel, Name, Version,
		"gather-reduce (sum, mean; AVX2 with prefetch or pure Go), expand-coalesce and sparse SGD/Adagrad/row-wise Adagrad, in canonical floating-point order; quantize/dequantize of low-precision rows",
		fields())
	info.Ops = []string{kernel.OpGatherReduce, kernel.OpScatter, kernel.OpExpandCoalesce, kernel.OpApply, kernel.OpQuantize, kernel.OpDequantize}
	return info, nil
}

func (k *cpuKernel) Configure(_ context.Context, setup plugin.Setup) error {
	var cfg Config
	if err := plugin.DecodeOptions(setup.Options, &cfg); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.cfg = cfg
	k.configured = true
	return nil
}

// begin is every call's preamble: the kernel is configured, the call not
// cancelled, and there is a request.
func (k *cpuKernel) begin(ctx context.Context, nilRequest bool, op string) (Config, error) {
	cfg, err := k.config()
	if err != nil {
		return cfg, err
	}
	if err := ctx.Err(); err != nil {
		return cfg, err
	}
	if nilRequest {
		return cfg, fmt.Errorf("%w: nil %s request", plugin.ErrInvalidRequest, op)
	}
	return cfg, nil
}

func (k *cpuKernel) config() (Config, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.configured {
		return Config{}, plugin.ErrNotConfigured
	}
	return k.cfg, nil
}

// tableView is one table of a request, mapped and checked.
type tableView struct {
	data   []float32 // Rows*stride, row-major
	dim    int
	stride int
	// idx holds the table's lookups; bag b is idx[off[b]:off[b+1]].
	idx []int64
	off []int64
	// pooled is the table's [bag][dim] block of Out or Grads.
	pooled []float32
}

// tableViews are the request's tables as the kernels take them.
func tableViews(in []kernel.TableView) []tableView {
	out := make([]tableView, len(in))
	for t, v := range in {
		out[t] = tableView{data: v.Data, dim: v.Dim, stride: v.Stride, idx: v.Indices, off: v.Offsets, pooled: v.Pooled}
	}
	return out
}

// forEachTable runs fn for every table, on up to workers goroutines when
// parallel is true. Each table's result depends only on that table, so the
// order in which tables finish does not matter.
func forEachTable(n, workers int, parallel bool, fn func(t int)) {
	if !parallel || workers <= 1 || n <= 1 {
		for t := range n {
			fn(t)
		}
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, workers)
	for t := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(t)
		})
	}
	wg.Wait()
}

// disjoint reports whether no ref in writes overlaps another write or any
// ref in reads: the condition for processing tables concurrently.
func disjoint(writes, reads []region.Ref) bool {
	for i, w := range writes {
		for _, o := range writes[i+1:] {
			if w.Overlaps(o) {
				return false
			}
		}
		for _, r := range reads {
			if w.Overlaps(r) {
				return false
			}
		}
	}
	return true
}

// GatherReduce pools every bag: out[t][b] = Σ rows (÷ bag length for Mean),
// accumulated in float32 in bag order. An empty bag pools to zeros.
func (k *cpuKernel) GatherReduce(ctx context.Context, req *kernel.GatherReduceRequest) (*kernel.Result, error) {
	cfg, err := k.begin(ctx, req == nil, "gather-reduce")
	if err != nil {
		return nil, err
	}
	checked, err := req.View(&k.mapper)
	if err != nil {
		return nil, fmt.Errorf("gather-reduce: %w", err)
	}
	views := tableViews(checked)
	reads := []region.Ref{req.Bags.Indices, req.Bags.Offsets}
	for _, tab := range req.Tables {
		reads = append(reads, tab.Data)
	}
	parallel := disjoint([]region.Ref{req.Out}, reads)
	pool := cfg.pooler()
	forEachTable(len(views), cfg.workers(), parallel, func(t int) {
		pool(&views[t], req.Reduce)
	})
	results := make([]kernel.Result, len(views))
	for t := range views {
		results[t] = gatherCounts(&views[t], req.Reduce)
	}
	return sum(results, offsetBytes(len(views), req.Bags.Batch)), nil
}

// gatherCounts is what pooling a table reads, writes and computes.
func gatherCounts(v *tableView, reduce kernel.Reduce) kernel.Result {
	dim := int64(v.dim)
	B := len(v.off) - 1
	n := v.off[B] - v.off[0]
	res := kernel.Result{BytesRead: n * (8 + 4*dim), BytesWritten: int64(B) * 4 * dim, FLOPs: n * dim}
	if reduce == kernel.Mean {
		for b := range B {
			if v.off[b+1] > v.off[b] {
				res.FLOPs += dim
			}
		}
	}
	return res
}

// sum adds the per-table results and read, the bytes read for all tables
// (the bag offsets: see offsetBytes).
func sum(results []kernel.Result, read int64) *kernel.Result {
	total := &kernel.Result{BytesRead: read}
	for _, r := range results {
		total.BytesRead += r.BytesRead
		total.BytesWritten += r.BytesWritten
		total.FLOPs += r.FLOPs
	}
	return total
}

// offsetBytes is the size of the offsets array, which every table's bags
// read: batch+1 int64s a table.
func offsetBytes(tables, batch int) int64 { return int64(tables) * int64(batch+1) * 8 }

// maxCoalescedRows bounds the tables that Scatter and ExpandCoalesce take:
// expand's sort keys hold a row id in 32 bits (row<<32 | bag), so a larger
// id would wrap and merge with another row's gradients.
const maxCoalescedRows = 1 << 32

// checkCoalescedRows refuses a table whose row ids do not fit a sort key.
func checkCoalescedRows(tables []kernel.Table) error {
	for t, tab := range tables {
		if tab.Rows > maxCoalescedRows {
			return fmt.Errorf("%w: table %d: %d rows; expand-coalesce takes at most 2³² rows a table", plugin.ErrInvalidRequest, t, tab.Rows)
		}
	}
	return nil
}

// Scatter applies Grads to the pooled rows: expand-coalesce, then the
// optimizer update once per unique row, each table on one goroutine.
func (k *cpuKernel) Scatter(ctx context.Context, req *kernel.ScatterRequest) (*kernel.Result, error) {
	cfg, err := k.begin(ctx, req == nil, "scatter")
	if err != nil {
		return nil, err
	}
	if err := checkCoalescedRows(req.Tables); err != nil {
		return nil, fmt.Errorf("scatter: %w", err)
	}
	checked, err := req.View(&k.mapper)
	if err != nil {
		return nil, fmt.Errorf("scatter: %w", err)
	}
	views := tableViews(checked)
	writes := make([]region.Ref, 0, len(req.Tables))
	for _, tab := range req.Tables {
		writes = append(writes, tab.Data)
	}
	parallel := disjoint(writes, []region.Ref{req.Bags.Indices, req.Bags.Offsets, req.Grads})
	coalesce := cfg.coalescer()
	u := update{opt: req.Optimizer, lr: req.LearningRate, eps: req.Epsilon, avx2: cfg.avx2()}
	results := make([]kernel.Result, len(views))
	forEachTable(len(views), cfg.workers(), parallel, func(t int) {
		s := scratchPool.Get().(*scratch)
		defer scratchPool.Put(s)
		results[t] = expandCoalesceApply(&views[t], req.Reduce, coalesce, u, s)
	})
	return sum(results, offsetBytes(len(views), req.Bags.Batch)), nil
}

// ExpandCoalesce is Scatter's first half, leaving the coalesced rows and
// gradients in req.Out.
func (k *cpuKernel) ExpandCoalesce(ctx context.Context, req *kernel.ExpandCoalesceRequest) (*kernel.CoalesceResult, error) {
	cfg, err := k.begin(ctx, req == nil, "expand-coalesce")
	if err != nil {
		return nil, err
	}
	if err := checkCoalescedRows(req.Tables); err != nil {
		return nil, fmt.Errorf("expand-coalesce: %w", err)
	}
	checked, err := req.View(&k.mapper)
	if err != nil {
		return nil, fmt.Errorf("expand-coalesce: %w", err)
	}
	views, out := tableViews(checked.Tables), checked.Out
	parallel := disjoint([]region.Ref{req.Out.Rows, req.Out.Grads}, []region.Ref{req.Bags.Indices, req.Bags.Offsets, req.Grads})
	coalesce := cfg.coalescer()
	results := make([]kernel.Result, len(views))
	counts := make([]int64, len(views))
	forEachTable(len(views), cfg.workers(), parallel, func(t int) {
		s := scratchPool.Get().(*scratch)
		defer scratchPool.Put(s)
		e, res := expand(&views[t], req.Reduce, s)
		unique := len(e.rows)
		copy(out[t].Rows, e.rows)
		e.coalesce(coalesce, 0, unique, out[t].Grads)
		res.BytesWritten = int64(unique) * (8 + 4*int64(e.dim))
		counts[t], results[t] = int64(unique), res
	})
	return &kernel.CoalesceResult{Result: *sum(results, offsetBytes(len(views), req.Bags.Batch)), Counts: counts}, nil
}

// Apply is Scatter's second half: the optimizer update of each coalesced
// row, in the order given.
func (k *cpuKernel) Apply(ctx context.Context, req *kernel.ApplyRequest) (*kernel.Result, error) {
	cfg, err := k.begin(ctx, req == nil, "apply")
	if err != nil {
		return nil, err
	}
	checked, err := req.View(&k.mapper)
	if err != nil {
		return nil, fmt.Errorf("apply: %w", err)
	}
	data, in, c := checked.Data, checked.Coalesced, req.Coalesced
	writes := make([]region.Ref, len(req.Tables))
	for t, tab := range req.Tables {
		writes[t] = tab.Data
	}
	parallel := disjoint(writes, []region.Ref{c.Rows, c.Grads})
	u := update{opt: req.Optimizer, lr: req.LearningRate, eps: req.Epsilon, avx2: cfg.avx2()}
	results := make([]kernel.Result, len(req.Tables))
	forEachTable(len(req.Tables), cfg.workers(), parallel, func(t int) {
		tab := req.Tables[t]
		results[t] = u.apply(data[t], tab.Dim, tab.RowStride(), in[t].Rows, len(in[t].Rows), in[t].Grads)
	})
	return sum(results, 0), nil
}
