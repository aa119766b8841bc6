package testplugins

import (
	"context"
	"fmt"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// Kernel is the reference embedding kernel: gather-reduce and SGD scatter,
// accumulating in bag order in float32.
type Kernel struct {
	mem region.Mapper
}

// NewKernel returns a reference kernel.
func NewKernel() *Kernel { return &Kernel{} }

func (k *Kernel) Info(context.Context) (plugin.Info, error) {
	return plugin.Info{
		Name:        "test-kernel",
		Version:     "0.1.0",
		Description: "reference kernel for the SDK's tests",
		Ops:         []string{kernel.OpGatherReduce, kernel.OpScatter},
	}, nil
}

func (k *Kernel) Configure(_ context.Context, setup plugin.Setup) error {
	return plugin.DecodeOptions(setup.Options, &struct{}{})
}

// bagView resolves a request's tables and bags.
type bagView struct {
	tables  [][]float32
	strides []int64
	indices []int64
	offsets []int64
}

func (k *Kernel) view(tables []kernel.Table, bags kernel.Bags) (*bagView, error) {
	v := &bagView{tables: make([][]float32, len(tables)), strides: make([]int64, len(tables))}
	for t, tab := range tables {
		if tab.Rows < 0 || tab.Dim <= 0 || (tab.Stride != 0 && tab.Stride < tab.Dim) {
			return nil, fmt.Errorf("%w: table %d is %d×%d (stride %d)", plugin.ErrInvalidRequest, t, tab.Rows, tab.Dim, tab.Stride)
		}
		v.strides[t] = int64(tab.RowStride())
		b, err := mapAtLeast(&k.mem, tab.Data, 4*tab.Rows*v.strides[t], fmt.Sprintf("table %d", t))
		if err != nil {
			return nil, err
		}
		v.tables[t] = region.Float32s(b)
	}
	if bags.Batch < 0 || len(bags.IndexStart) != len(tables) {
		return nil, fmt.Errorf("%w: batch %d with %d index starts for %d tables", plugin.ErrInvalidRequest, bags.Batch, len(bags.IndexStart), len(tables))
	}
	ob, err := mapAtLeast(&k.mem, bags.Offsets, 8*int64(len(tables)*(bags.Batch+1)), "offsets")
	if err != nil {
		return nil, err
	}
	v.offsets = region.Int64s(ob)
	ib, err := k.mem.Bytes(bags.Indices)
	if err != nil {
		return nil, fmt.Errorf("%w: indices: %v", plugin.ErrInvalidRequest, err)
	}
	v.indices = region.Int64s(ib)
	for t, tab := range tables {
		for b := 0; b < bags.Batch; b++ {
			lo, hi := v.bag(bags, t, b)
			if lo < 0 || hi < lo || hi > int64(len(v.indices)) {
				return nil, fmt.Errorf("%w: table %d bag %d indices [%d, %d) outside %d", plugin.ErrInvalidRequest, t, b, lo, hi, len(v.indices))
			}
			for _, row := range v.indices[lo:hi] {
				if row < 0 || row >= tab.Rows {
					return nil, fmt.Errorf("%w: table %d bag %d row %d outside [0, %d)", plugin.ErrInvalidRequest, t, b, row, tab.Rows)
				}
			}
		}
	}
	return v, nil
}

func (v *bagView) bag(bags kernel.Bags, t, b int) (lo, hi int64) {
	base := t * (bags.Batch + 1)
	return bags.IndexStart[t] + v.offsets[base+b], bags.IndexStart[t] + v.offsets[base+b+1]
}

func pooledSize(tables []kernel.Table, batch int) int64 {
	var n int64
	for _, t := range tables {
		n += int64(batch) * int64(t.Dim)
	}
	return n
}

func (k *Kernel) GatherReduce(_ context.Context, req *kernel.GatherReduceRequest) (*kernel.Result, error) {
	if req.Reduce != kernel.Sum && req.Reduce != kernel.Mean {
		return nil, fmt.Errorf("%w: reduce %d", plugin.ErrInvalidRequest, req.Reduce)
	}
	v, err := k.view(req.Tables, req.Bags)
	if err != nil {
		return nil, err
	}
	ob, err := mapAtLeast(&k.mem, req.Out, 4*pooledSize(req.Tables, req.Bags.Batch), "out")
	if err != nil {
		return nil, err
	}
	out := region.Float32s(ob)
	res := &kernel.Result{}
	pos := 0
	for t, tab := range req.Tables {
		dim := tab.Dim
		for b := 0; b < req.Bags.Batch; b++ {
			acc := out[pos : pos+dim]
			clear(acc)
			lo, hi := v.bag(req.Bags, t, b)
			for _, row := range v.indices[lo:hi] {
				src := v.tables[t][row*v.strides[t] : row*v.strides[t]+int64(dim)]
				for d := range acc {
					acc[d] += src[d]
				}
			}
			if req.Reduce == kernel.Mean && hi > lo {
				n := float32(hi - lo)
				for d := range acc {
					acc[d] /= n
				}
			}
			res.BytesRead += (hi - lo) * int64(4*dim)
			res.FLOPs += (hi - lo) * int64(dim)
			pos += dim
		}
	}
	res.BytesWritten = 4 * int64(len(out))
	return res, nil
}

func (k *Kernel) Scatter(_ context.Context, req *kernel.ScatterRequest) (*kernel.Result, error) {
	if req.Optimizer != kernel.SGD {
		return nil, fmt.Errorf("%w: optimizer %d", plugin.ErrUnsupported, req.Optimizer)
	}
	if req.Reduce != kernel.Sum && req.Reduce != kernel.Mean {
		return nil, fmt.Errorf("%w: reduce %d", plugin.ErrInvalidRequest, req.Reduce)
	}
	v, err := k.view(req.Tables, req.Bags)
	if err != nil {
		return nil, err
	}
	gb, err := mapAtLeast(&k.mem, req.Grads, 4*pooledSize(req.Tables, req.Bags.Batch), "grads")
	if err != nil {
		return nil, err
	}
	grads := region.Float32s(gb)
	res := &kernel.Result{}
	pos := 0
	for t, tab := range req.Tables {
		dim := tab.Dim
		// Coalesce: each distinct row's gradient is summed over its
		// occurrences in position order, then applied once.
		sum := map[int64][]float32{}
		var order []int64
		for b := 0; b < req.Bags.Batch; b++ {
			g := grads[pos+b*dim : pos+(b+1)*dim]
			lo, hi := v.bag(req.Bags, t, b)
			scale := float32(1)
			if req.Reduce == kernel.Mean && hi > lo {
				scale = 1 / float32(hi-lo)
			}
			for _, row := range v.indices[lo:hi] {
				acc, ok := sum[row]
				if !ok {
					acc = make([]float32, dim)
					sum[row] = acc
					order = append(order, row)
				}
				for d := range acc {
					acc[d] += g[d] * scale
				}
			}
		}
		for _, row := range order {
			dst := v.tables[t][row*v.strides[t] : row*v.strides[t]+int64(dim)]
			for d, g := range sum[row] {
				dst[d] -= req.LearningRate * g
			}
		}
		res.BytesRead += int64(len(order)) * int64(4*dim)
		res.BytesWritten += int64(len(order)) * int64(4*dim)
		res.FLOPs += 2 * int64(len(order)) * int64(dim)
		pos += req.Bags.Batch * dim
	}
	return res, nil
}

// ExpandCoalesce is not part of the reference kernel.
func (k *Kernel) ExpandCoalesce(context.Context, *kernel.ExpandCoalesceRequest) (*kernel.CoalesceResult, error) {
	return nil, plugin.ErrUnsupported
}

// Apply is not part of the reference kernel.
func (k *Kernel) Apply(context.Context, *kernel.ApplyRequest) (*kernel.Result, error) {
	return nil, plugin.ErrUnsupported
}
