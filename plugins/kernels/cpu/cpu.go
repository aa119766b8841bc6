// Package cpu is the reference embedding kernel, in pure Go on the host
// CPU: GatherReduce pools each bag's rows (sum or mean), and Scatter applies
// the pooled gradients with SGD through Tensor Casting's expand-coalesce
// (Alg. 1): each bag's gradient is expanded to every row it pooled, the
// expanded gradients of a row are coalesced, and the row is updated once.
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
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
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
		Description: "pure-Go gather-reduce (sum, mean) and expand-coalesce SGD scatter, in canonical floating-point order",
		Config:      fields(),
		Ops:         []string{kernel.OpGatherReduce, kernel.OpScatter},
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
		if tab.Dim < 1 || tab.Rows < 0 || (tab.Rows > 0 && tab.Rows > math.MaxInt64/4/int64(tab.Dim)) {
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
		if tab.Stride != 0 && tab.Stride < tab.Dim {
			return nil, fmt.Errorf("%w: table %d: stride %d < dim %d", plugin.ErrInvalidRequest, t, tab.Stride, tab.Dim)
		}
		stride := tab.RowStride()
		if tab.Rows > 0 && tab.Rows > math.MaxInt64/4/int64(stride) {
			return nil, fmt.Errorf("%w: table %d: bad shape %d×%d", plugin.ErrInvalidRequest, t, tab.Rows, stride)
		}
		data, err := shm.Float32s(&k.mapper, tab.Data, tab.Rows*int64(stride), fmt.Sprintf("table %d data", t))
		if err != nil {
			return nil, err
		}
		views[t] = tableView{data: data, dim: tab.Dim, stride: stride, off: off}
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
	cfg, err := k.config()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req == nil {
		return nil, fmt.Errorf("%w: nil gather-reduce request", plugin.ErrInvalidRequest)
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
	results := make([]kernel.Result, len(views))
	forEachTable(len(views), cfg.workers(), parallel, func(t int) {
		results[t] = gatherReduce(&views[t], req.Reduce)
	})
	return sum(results, len(views), req.Bags.Batch), nil
}

func gatherReduce(v *tableView, reduce kernel.Reduce) kernel.Result {
	dim := v.dim
	var res kernel.Result
	for b := range len(v.off) - 1 {
		out := v.pooled[b*dim : (b+1)*dim]
		clear(out)
		bag := v.idx[v.off[b]:v.off[b+1]]
		for _, r := range bag {
			row := v.data[r*int64(v.stride) : r*int64(v.stride)+int64(dim)]
			for d := range out {
				out[d] += row[d]
			}
		}
		n := int64(len(bag))
		res.BytesRead += n * (8 + 4*int64(dim))
		res.FLOPs += n * int64(dim)
		if reduce == kernel.Mean && n > 0 {
			// Divide rather than multiply by 1/n: a reciprocal rounds once
			// more, and every kernel must agree on the canonical result.
			fn := float32(n)
			for d := range out {
				out[d] /= fn
			}
			res.FLOPs += int64(dim)
		}
		res.BytesWritten += 4 * int64(dim)
	}
	return res
}

// sum adds the per-table results and the offsets array every table read.
func sum(results []kernel.Result, tables, batch int) *kernel.Result {
	total := &kernel.Result{BytesRead: int64(tables) * int64(batch+1) * 8}
	for _, r := range results {
		total.BytesRead += r.BytesRead
		total.BytesWritten += r.BytesWritten
		total.FLOPs += r.FLOPs
	}
	return total
}

// Scatter applies Grads to the pooled rows with SGD, by expand-coalesce.
func (k *cpuKernel) Scatter(ctx context.Context, req *kernel.ScatterRequest) (*kernel.Result, error) {
	cfg, err := k.config()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req == nil {
		return nil, fmt.Errorf("%w: nil scatter request", plugin.ErrInvalidRequest)
	}
	if req.Optimizer != kernel.SGD {
		return nil, fmt.Errorf("scatter: optimizer %d: %w", req.Optimizer, plugin.ErrUnsupported)
	}
	if lr := float64(req.LearningRate); math.IsNaN(lr) || math.IsInf(lr, 0) {
		return nil, fmt.Errorf("%w: scatter: learning rate %v", plugin.ErrInvalidRequest, req.LearningRate)
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
	results := make([]kernel.Result, len(views))
	forEachTable(len(views), cfg.workers(), parallel, func(t int) {
		results[t] = expandCoalesceSGD(&views[t], req.Reduce, req.LearningRate)
	})
	return sum(results, len(views), req.Bags.Batch), nil
}

// lookup is one expanded gradient: the row it updates, and the bag whose
// gradient it carries. Lookups are built in position order and sorted
// stably by row, which yields the canonical (row, position) order.
type lookup struct {
	row int64
	bag int32
}

// expandCoalesceSGD is Tensor Casting's Alg. 1 followed by the SGD update:
// expand each bag's gradient to its rows, coalesce the gradients of equal
// rows, and apply row -= lr * coalesced once per unique row.
func expandCoalesceSGD(v *tableView, reduce kernel.Reduce, lr float32) kernel.Result {
	dim := int64(v.dim)
	B := len(v.off) - 1
	var res kernel.Result
	res.BytesRead += int64(B) * dim * 4 // the gradients

	// Expand.
	lookups := make([]lookup, 0, v.off[B]-v.off[0])
	for b := range B {
		for _, r := range v.idx[v.off[b]:v.off[b+1]] {
			lookups = append(lookups, lookup{row: r, bag: int32(b)})
		}
	}
	n := int64(len(lookups))
	res.BytesRead += n * 8
	if reduce == kernel.Mean {
		res.FLOPs += n * dim // one division per expanded element
	}
	slices.SortStableFunc(lookups, func(a, b lookup) int { return cmp.Compare(a.row, b.row) })

	// Coalesce and update.
	acc := make([]float32, dim)
	for i := 0; i < len(lookups); {
		r := lookups[i].row
		clear(acc)
		for ; i < len(lookups) && lookups[i].row == r; i++ {
			b := int64(lookups[i].bag)
			g := v.pooled[b*dim : (b+1)*dim]
			if reduce == kernel.Mean {
				bagLen := float32(v.off[b+1] - v.off[b])
				for d := range acc {
					acc[d] += g[d] / bagLen
				}
			} else {
				for d := range acc {
					acc[d] += g[d]
				}
			}
			res.FLOPs += dim
		}
		row := v.data[r*int64(v.stride) : r*int64(v.stride)+dim]
		for d := range row {
			// The explicit conversion forbids fusing the multiply and the
			// subtraction into one FMA (Go may fuse on arm64 and with
			// GOAMD64=v3), which would change the digest between machines.
			row[d] -= float32(lr * acc[d])
		}
		res.FLOPs += 2 * dim
		res.BytesRead += 4 * dim
		res.BytesWritten += 4 * dim
	}
	return res
}

// ExpandCoalesce is not implemented yet.
func (k *cpuKernel) ExpandCoalesce(context.Context, *kernel.ExpandCoalesceRequest) (*kernel.CoalesceResult, error) {
	return nil, plugin.ErrUnsupported
}

// Apply is not implemented yet.
func (k *cpuKernel) Apply(context.Context, *kernel.ApplyRequest) (*kernel.Result, error) {
	return nil, plugin.ErrUnsupported
}
