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
// It imports only sdk/ and the built-in plugins' internal helpers.
package cpu

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/flowrun/flowrun/plugins/internal/shm"
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
	return plugin.Info{
		Kind:        plugin.KindKernel,
		Name:        Name,
		Version:     Version,
		APIVersion:  plugin.APIVersion,
		Description: "gather-reduce (sum, mean; AVX2 with prefetch or pure Go), expand-coalesce and sparse SGD/Adagrad/row-wise Adagrad, in canonical floating-point order",
		Config:      fields(),
		Ops:         []string{kernel.OpGatherReduce, kernel.OpScatter, kernel.OpExpandCoalesce, kernel.OpApply},
	}, nil
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

// view checks a request's tables and bags and maps them. pooledRef is Out
// (gather-reduce) or Grads (scatter), float32 [table][bag][dim].
func (k *cpuKernel) view(tables []kernel.Table, bags kernel.Bags, reduce kernel.Reduce, pooledRef region.Ref, pooledName string) ([]tableView, error) {
	return k.viewTables(tables, bags, reduce, pooledRef, pooledName, false)
}

// viewTables is view; with shapeOnly, tables without a Data ref are checked
// for shape only and get no rows (expand-coalesce reads none).
func (k *cpuKernel) viewTables(tables []kernel.Table, bags kernel.Bags, reduce kernel.Reduce, pooledRef region.Ref, pooledName string, shapeOnly bool) ([]tableView, error) {
	if reduce != kernel.Sum && reduce != kernel.Mean {
		return nil, fmt.Errorf("%w: unknown reduce %d", plugin.ErrInvalidRequest, reduce)
	}
	if len(bags.IndexStart) != len(tables) {
		return nil, fmt.Errorf("%w: %d index starts for %d tables", plugin.ErrInvalidRequest, len(bags.IndexStart), len(tables))
	}
	if bags.Batch < 0 || bags.Batch > math.MaxInt32 {
		return nil, fmt.Errorf("%w: batch must be in [0, 2³¹), got %d", plugin.ErrInvalidRequest, bags.Batch)
	}
	B := int64(bags.Batch)
	T := int64(len(tables))
	offsets, err := shm.Int64s(&k.mapper, bags.Offsets, T*(B+1), "offsets")
	if err != nil {
		return nil, err
	}
	views := make([]tableView, len(tables))
	var nIndices, pooledLen int64
	for t, tab := range tables {
		if tab.Dim < 1 || tab.Rows < 0 {
			return nil, fmt.Errorf("%w: table %d: bad shape %d×%d", plugin.ErrInvalidRequest, t, tab.Rows, tab.Dim)
		}
		off := offsets[int64(t)*(B+1) : int64(t+1)*(B+1)]
		if off[0] < 0 {
			return nil, fmt.Errorf("%w: table %d: negative bag offset %d", plugin.ErrInvalidRequest, t, off[0])
		}
		for b := range B {
			if off[b+1] < off[b] {
				return nil, fmt.Errorf("%w: table %d: bag %d offsets decrease (%d > %d)", plugin.ErrInvalidRequest, t, b, off[b], off[b+1])
			}
		}
		start := bags.IndexStart[t]
		if start < 0 || off[B] > math.MaxInt64-start {
			return nil, fmt.Errorf("%w: table %d: bad index start %d", plugin.ErrInvalidRequest, t, start)
		}
		nIndices = max(nIndices, start+off[B])
		var data []float32
		if !shapeOnly {
			var err error
			if data, err = k.tableData(t, tab); err != nil {
				return nil, err
			}
		}
		views[t] = tableView{data: data, dim: tab.Dim, stride: tab.RowStride(), off: off}
		pooledLen += B * int64(tab.Dim)
	}
	indices, err := shm.Int64s(&k.mapper, bags.Indices, nIndices, "indices")
	if err != nil {
		return nil, err
	}
	pooled, err := shm.Float32s(&k.mapper, pooledRef, pooledLen, pooledName)
	if err != nil {
		return nil, err
	}
	var at int64
	for t, tab := range tables {
		v := &views[t]
		start := bags.IndexStart[t]
		v.idx = indices[start : start+v.off[B]]
		for p, r := range v.idx[v.off[0]:] {
			if r < 0 || r >= tab.Rows {
				return nil, fmt.Errorf("%w: table %d: index %d at position %d outside [0, %d)",
					plugin.ErrInvalidRequest, t, r, v.off[0]+int64(p), tab.Rows)
			}
		}
		n := B * int64(tab.Dim)
		v.pooled = pooled[at : at+n]
		at += n
	}
	return views, nil
}

// tableData checks table t's shape and stride and maps its rows.
func (k *cpuKernel) tableData(t int, tab kernel.Table) ([]float32, error) {
	if tab.Dim < 1 || tab.Rows < 0 || tab.Stride < 0 || (tab.Stride != 0 && tab.Stride < tab.Dim) {
		return nil, fmt.Errorf("%w: table %d: bad shape %d×%d (stride %d)", plugin.ErrInvalidRequest, t, tab.Rows, tab.Dim, tab.Stride)
	}
	stride := int64(tab.RowStride())
	if tab.Rows > 0 && tab.Rows > math.MaxInt64/4/stride {
		return nil, fmt.Errorf("%w: table %d: %d rows of %d floats overflow", plugin.ErrInvalidRequest, t, tab.Rows, stride)
	}
	return shm.Float32s(&k.mapper, tab.Data, tab.Rows*stride, fmt.Sprintf("table %d data", t))
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
			if shm.Overlap(w, o) {
				return false
			}
		}
		for _, r := range reads {
			if shm.Overlap(w, r) {
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
	views, err := k.view(req.Tables, req.Bags, req.Reduce, req.Out, "out")
	if err != nil {
		return nil, fmt.Errorf("gather-reduce: %w", err)
	}
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

// checkUpdate validates an optimizer step's parameters against the tables
// it updates: the optimizer is known, the learning rate and ε finite, and
// every row wide enough for its state.
func checkUpdate(tables []kernel.Table, opt kernel.Optimizer, lr, eps float32) error {
	switch opt {
	case kernel.SGD, kernel.Adagrad, kernel.RowWiseAdagrad:
	default:
		return fmt.Errorf("optimizer %d: %w", opt, plugin.ErrUnsupported)
	}
	if x := float64(lr); math.IsNaN(x) || math.IsInf(x, 0) {
		return fmt.Errorf("%w: learning rate %v", plugin.ErrInvalidRequest, lr)
	}
	if x := float64(eps); opt != kernel.SGD && (math.IsNaN(x) || math.IsInf(x, 0) || x < 0) {
		return fmt.Errorf("%w: epsilon %v", plugin.ErrInvalidRequest, eps)
	}
	for t, tab := range tables {
		if need := tab.Dim + kernel.StateFloats(opt, tab.Dim); tab.RowStride() < need {
			return fmt.Errorf("%w: table %d: %s needs a stride of at least %d floats (dim %d + state), got %d",
				plugin.ErrInvalidRequest, t, opt, need, tab.Dim, tab.RowStride())
		}
	}
	return nil
}

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
	if err := checkUpdate(req.Tables, req.Optimizer, req.LearningRate, req.Epsilon); err != nil {
		return nil, fmt.Errorf("scatter: %w", err)
	}
	if err := checkCoalescedRows(req.Tables); err != nil {
		return nil, fmt.Errorf("scatter: %w", err)
	}
	views, err := k.view(req.Tables, req.Bags, req.Reduce, req.Grads, "grads")
	if err != nil {
		return nil, fmt.Errorf("scatter: %w", err)
	}
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
	// The rows are not read: check the shapes, not the table regions.
	views, err := k.viewTables(req.Tables, req.Bags, req.Reduce, req.Grads, "grads", true)
	if err != nil {
		return nil, fmt.Errorf("expand-coalesce: %w", err)
	}
	capacity := make([]int64, len(views))
	for t, v := range views {
		capacity[t] = v.off[len(v.off)-1] - v.off[0]
	}
	out, err := k.coalescedView(req.Tables, req.Out, capacity, "out")
	if err != nil {
		return nil, fmt.Errorf("expand-coalesce: %w", err)
	}
	parallel := disjoint([]region.Ref{req.Out.Rows, req.Out.Grads}, []region.Ref{req.Bags.Indices, req.Bags.Offsets, req.Grads})
	coalesce := cfg.coalescer()
	results := make([]kernel.Result, len(views))
	counts := make([]int64, len(views))
	forEachTable(len(views), cfg.workers(), parallel, func(t int) {
		s := scratchPool.Get().(*scratch)
		defer scratchPool.Put(s)
		e, res := expand(&views[t], req.Reduce, s)
		unique := len(e.rows)
		copy(out[t].rows, e.rows)
		e.coalesce(coalesce, 0, unique, out[t].grads)
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
	if err := checkUpdate(req.Tables, req.Optimizer, req.LearningRate, req.Epsilon); err != nil {
		return nil, fmt.Errorf("apply: %w", err)
	}
	c := req.Coalesced
	if len(c.Counts) != len(req.Tables) {
		return nil, fmt.Errorf("%w: apply: %d counts for %d tables", plugin.ErrInvalidRequest, len(c.Counts), len(req.Tables))
	}
	in, err := k.coalescedView(req.Tables, c, c.Counts, "coalesced")
	if err != nil {
		return nil, fmt.Errorf("apply: %w", err)
	}
	data := make([][]float32, len(req.Tables))
	writes := make([]region.Ref, len(req.Tables))
	for t, tab := range req.Tables {
		if data[t], err = k.tableData(t, tab); err != nil {
			return nil, fmt.Errorf("apply: %w", err)
		}
		for _, r := range in[t].rows {
			if r < 0 || r >= tab.Rows {
				return nil, fmt.Errorf("%w: apply: table %d: row %d outside [0, %d)", plugin.ErrInvalidRequest, t, r, tab.Rows)
			}
		}
		writes[t] = tab.Data
	}
	parallel := disjoint(writes, []region.Ref{c.Rows, c.Grads})
	u := update{opt: req.Optimizer, lr: req.LearningRate, eps: req.Epsilon, avx2: cfg.avx2()}
	results := make([]kernel.Result, len(req.Tables))
	forEachTable(len(req.Tables), cfg.workers(), parallel, func(t int) {
		tab := req.Tables[t]
		results[t] = u.apply(data[t], tab.Dim, tab.RowStride(), in[t].rows, len(in[t].rows), in[t].grads)
	})
	return sum(results, 0), nil
}

// coalescedBlock is one table's block of a Coalesced: n rows and their
// gradients.
type coalescedBlock struct {
	rows  []int64
	grads []float32
}

// coalescedView maps each table's block of c with room for n[t] rows, and
// checks that no two blocks overlap (tables are written concurrently).
func (k *cpuKernel) coalescedView(tables []kernel.Table, c kernel.Coalesced, n []int64, what string) ([]coalescedBlock, error) {
	if len(c.RowStart) != len(tables) || len(c.GradStart) != len(tables) {
		return nil, fmt.Errorf("%w: %s: %d row starts and %d gradient starts for %d tables",
			plugin.ErrInvalidRequest, what, len(c.RowStart), len(c.GradStart), len(tables))
	}
	var rowsLen, gradsLen int64
	for t, tab := range tables {
		if n[t] < 0 || c.RowStart[t] < 0 || c.GradStart[t] < 0 || tab.Dim < 1 ||
			n[t] > math.MaxInt32*int64(64) || c.RowStart[t] > math.MaxInt64/2 || c.GradStart[t] > math.MaxInt64/2 {
			return nil, fmt.Errorf("%w: %s: table %d: bad block (start %d/%d, %d rows)", plugin.ErrInvalidRequest, what, t, c.RowStart[t], c.GradStart[t], n[t])
		}
		rowsLen = max(rowsLen, c.RowStart[t]+n[t])
		gradsLen = max(gradsLen, c.GradStart[t]+n[t]*int64(tab.Dim))
	}
	rows, err := shm.Int64s(&k.mapper, c.Rows, rowsLen, what+" rows")
	if err != nil {
		return nil, err
	}
	grads, err := shm.Float32s(&k.mapper, c.Grads, gradsLen, what+" grads")
	if err != nil {
		return nil, err
	}
	blocks := make([]coalescedBlock, len(tables))
	for t, tab := range tables {
		blocks[t] = coalescedBlock{
			rows:  rows[c.RowStart[t] : c.RowStart[t]+n[t]],
			grads: grads[c.GradStart[t] : c.GradStart[t]+n[t]*int64(tab.Dim)],
		}
		for u := range t {
			if overlap(c.RowStart[t], n[t], c.RowStart[u], n[u]) ||
				overlap(c.GradStart[t], n[t]*int64(tab.Dim), c.GradStart[u], n[u]*int64(tables[u].Dim)) {
				return nil, fmt.Errorf("%w: %s: the blocks of tables %d and %d overlap", plugin.ErrInvalidRequest, what, u, t)
			}
		}
	}
	return blocks, nil
}

func overlap(a, n, b, m int64) bool { return n > 0 && m > 0 && a < b+m && b < a+n }
