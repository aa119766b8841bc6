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

func (k *Kernel) GatherReduce(_ context.Context, req *kernel.GatherReduceRequest) (*kernel.Result, error) {
	views, err := req.View(&k.mem)
	if err != nil {
		return nil, err
	}
	res := &kernel.Result{}
	for _, v := range views {
		for b := 0; b < req.Bags.Batch; b++ {
			acc := v.Pooled[b*v.Dim : (b+1)*v.Dim]
			clear(acc)
			bag := v.Bag(b)
			for _, row := range bag {
				src := v.Data[row*int64(v.Stride):]
				for d := range acc {
					acc[d] += src[d]
				}
			}
			if req.Reduce == kernel.Mean && len(bag) > 0 {
				n := float32(len(bag))
				for d := range acc {
					acc[d] /= n
				}
			}
		}
		res.BytesRead += v.Lookups() * int64(4*v.Dim)
		res.FLOPs += v.Lookups() * int64(v.Dim)
		res.BytesWritten += 4 * int64(len(v.Pooled))
	}
	return res, nil
}

func (k *Kernel) Scatter(_ context.Context, req *kernel.ScatterRequest) (*kernel.Result, error) {
	if req.Optimizer != kernel.SGD {
		return nil, fmt.Errorf("%w: optimizer %d", plugin.ErrUnsupported, req.Optimizer)
	}
	views, err := req.View(&k.mem)
	if err != nil {
		return nil, err
	}
	res := &kernel.Result{}
	for _, v := range views {
		// Coalesce: each distinct row's gradient is summed over its
		// occurrences in position order, then applied once.
		sum := map[int64][]float32{}
		var order []int64
		for b := 0; b < req.Bags.Batch; b++ {
			g := v.Pooled[b*v.Dim : (b+1)*v.Dim]
			bag := v.Bag(b)
			scale := float32(1)
			if req.Reduce == kernel.Mean && len(bag) > 0 {
				scale = 1 / float32(len(bag))
			}
			for _, row := range bag {
				acc, ok := sum[row]
				if !ok {
					acc = make([]float32, v.Dim)
					sum[row] = acc
					order = append(order, row)
				}
				for d := range acc {
					acc[d] += g[d] * scale
				}
			}
		}
		for _, row := range order {
			dst := v.Data[row*int64(v.Stride):]
			for d, g := range sum[row] {
				dst[d] -= req.LearningRate * g
			}
		}
		n := int64(len(order)) * int64(v.Dim)
		res.BytesRead += 4 * n
		res.BytesWritten += 4 * n
		res.FLOPs += 2 * n
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
