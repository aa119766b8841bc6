package kerneltest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/sdk/internal/plugintest"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

const learningRate = 0.25

// setup is the Setup the suite configures kernels with.
func (c config) setup(testing.TB) plugin.Setup {
	return plugin.Setup{RunID: "kerneltest", Seed: 3, Tables: shapes, BatchSize: batchSize, Lookups: 4, Options: c.options}
}

// runContract runs the kernel's own contract tests (plugintest.Suite runs
// Info and UnknownOption); connect returns a fresh, unconfigured kernel
// behind real gRPC.
func (c config) runContract(t *testing.T, connect func(*testing.T) kernel.Kernel) {
	t.Helper()
	ctx := context.Background()
	setup := c.setup(t)
	configured := func(t *testing.T) kernel.Kernel {
		t.Helper()
		return plugintest.Configured(t, connect(t), setup)
	}

	var ops []string
	t.Run("Ops", func(t *testing.T) {
		info, err := connect(t).Info(ctx)
		if err != nil {
			t.Fatalf("Info: %v", err)
		}
		if len(info.Ops) == 0 {
			t.Errorf("Info.Ops is empty; a kernel lists the operators it implements (%q, %q, ...)", kernel.OpGatherReduce, kernel.OpScatter)
		}
		ops = info.Ops
	})
	if t.Failed() {
		return
	}

	runGatherReduceContract(t, ctx, ops, configured)
	runScatterContract(t, ctx, ops, configured)
	runStrideContract(t, ctx, ops, configured)
	runOptimizerContract(t, ctx, ops, configured)
	runSplitContract(t, ctx, ops, configured)
	runConvertContract(t, ctx, ops, configured)
}

// runGatherReduceContract checks GatherReduce: sum bit for bit, mean
// within rounding, invalid requests refused; or ErrUnsupported where the
// kernel does not list it.
func runGatherReduceContract(t *testing.T, ctx context.Context, ops []string, configured func(*testing.T) kernel.Kernel) {
	if !slices.Contains(ops, kernel.OpGatherReduce) {
		t.Run("GatherReduceUnsupported", func(t *testing.T) {
			f := newFixture(t, 1)
			_, err := configured(t).GatherReduce(ctx, &kernel.GatherReduceRequest{Tables: f.tables, Bags: f.bags, Out: f.pooled})
			if !errors.Is(err, plugin.ErrUnsupported) {
				t.Fatalf("GatherReduce not in Info.Ops: err = %v, want plugin.ErrUnsupported", err)
			}
		})
	} else {
		t.Run("GatherReduceSum", func(t *testing.T) {
			k, f := configured(t), newFixture(t, 1)
			before := f.rows()
			want := referencePool(f, before, kernel.Sum)
			for round := range 2 {
				checkPooledBits(t, fmt.Sprintf("round %d", round), gatherReduce(t, ctx, k, f, kernel.Sum), want)
			}
			if !slices.EqualFunc(before, f.rows(), slices.Equal) {
				t.Error("GatherReduce changed the tables")
			}
		})

		t.Run("GatherReduceMean", func(t *testing.T) {
			k, f := configured(t), newFixture(t, 2)
			want := referencePool(f, f.rows(), kernel.Mean)
			got := gatherReduce(t, ctx, k, f, kernel.Mean)
			for i := range want {
				if !near(got[i], want[i]) || (want[i] == 0 && got[i] != 0) {
					t.Fatalf("table %d bag %d dim %d: got %v, want %v", i/(batchSize*dim), i/dim%batchSize, i%dim, got[i], want[i])
				}
			}
		})

		t.Run("GatherReduceInvalid", func(t *testing.T) {
			k := configured(t)
			invalid(t, "row = table rows", func(f *fixture) error {
				f.int64s(f.bags.Indices)[0] = shapes[0].Rows
				_, err := k.GatherReduce(ctx, &kernel.GatherReduceRequest{Tables: f.tables, Bags: f.bags, Out: f.pooled})
				return err
			})
			invalid(t, "negative row", func(f *fixture) error {
				f.int64s(f.bags.Indices)[f.bags.IndexStart[2]] = -1
				_, err := k.GatherReduce(ctx, &kernel.GatherReduceRequest{Tables: f.tables, Bags: f.bags, Out: f.pooled})
				return err
			})
			invalid(t, "short output", func(f *fixture) error {
				out := f.pooled
				out.Length -= 4 * dim
				_, err := k.GatherReduce(ctx, &kernel.GatherReduceRequest{Tables: f.tables, Bags: f.bags, Out: out})
				return err
			})
			invalid(t, "missing table region", func(f *fixture) error {
				f.tables[1].Data = region.Ref{Region: region.Prefix + "0-0-kerneltest-missing", Length: f.tables[1].Data.Length}
				_, err := k.GatherReduce(ctx, &kernel.GatherReduceRequest{Tables: f.tables, Bags: f.bags, Out: f.pooled})
				return err
			})
			invalid(t, "table ref shorter than its rows", func(f *fixture) error {
				f.tables[0].Data.Length -= 4 * dim
				_, err := k.GatherReduce(ctx, &kernel.GatherReduceRequest{Tables: f.tables, Bags: f.bags, Out: f.pooled})
				return err
			})
		})
	}
}

// runScatterContract checks Scatter with SGD against the coalesced update,
// and that invalid requests are refused; or ErrUnsupported where the
// kernel does not list it.
func runScatterContract(t *testing.T, ctx context.Context, ops []string, configured func(*testing.T) kernel.Kernel) {
	if !slices.Contains(ops, kernel.OpScatter) {
		t.Run("ScatterUnsupported", func(t *testing.T) {
			f := newFixture(t, 1)
			_, err := configured(t).Scatter(ctx, &kernel.ScatterRequest{Tables: f.tables, Bags: f.bags, Grads: f.pooled, LearningRate: learningRate})
			if !errors.Is(err, plugin.ErrUnsupported) {
				t.Fatalf("Scatter not in Info.Ops: err = %v, want plugin.ErrUnsupported", err)
			}
		})
	} else {
		for _, reduce := range []kernel.Reduce{kernel.Sum, kernel.Mean} {
			name := map[kernel.Reduce]string{kernel.Sum: "ScatterSGDSum", kernel.Mean: "ScatterSGDMean"}[reduce]
			t.Run(name, func(t *testing.T) {
				k, f := configured(t), newFixture(t, 3+uint64(reduce))
				grads := f.floats(f.pooled)
				for i := range grads {
					grads[i] = float32(math.Sin(float64(i)))
				}
				before := f.rows()
				want := referenceScatter(f, before, grads, reduce, learningRate)
				res, err := k.Scatter(ctx, &kernel.ScatterRequest{
					Tables: f.tables, Bags: f.bags, Reduce: reduce, Grads: f.pooled,
					Optimizer: kernel.SGD, LearningRate: learningRate,
				})
				if err != nil {
					t.Fatalf("Scatter: %v", err)
				}
				checkResult(t, res)
				compareRows(t, "SGD", f.rows(), want, before, dim)
			})
		}

		t.Run("ScatterInvalid", func(t *testing.T) {
			k := configured(t)
			invalid(t, "row = table rows", func(f *fixture) error {
				f.int64s(f.bags.Indices)[f.bags.IndexStart[1]] = shapes[1].Rows
				_, err := k.Scatter(ctx, &kernel.ScatterRequest{Tables: f.tables, Bags: f.bags, Grads: f.pooled, LearningRate: learningRate})
				return err
			})
			invalid(t, "short gradients", func(f *fixture) error {
				g := f.pooled
				g.Length = 4
				_, err := k.Scatter(ctx, &kernel.ScatterRequest{Tables: f.tables, Bags: f.bags, Grads: g, LearningRate: learningRate})
				return err
			})
		})
	}
}

// invalid builds a fresh fixture, lets call break and use it, and expects
// plugin.ErrInvalidRequest.
func invalid(t *testing.T, what string, call func(*fixture) error) {
	t.Helper()
	f := newFixture(t, 9)
	if err := call(f); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Errorf("%s: err = %v, want plugin.ErrInvalidRequest", what, err)
	}
}

// gatherReduce pools f's bags with k into f.pooled, which it first fills
// with NaN so that an output left unwritten shows, checks the Result and
// returns the pooled floats.
func gatherReduce(t *testing.T, ctx context.Context, k kernel.Kernel, f *fixture, reduce kernel.Reduce) []float32 {
	t.Helper()
	f.fill(f.pooled, float32(math.NaN()))
	res, err := k.GatherReduce(ctx, &kernel.GatherReduceRequest{Tables: f.tables, Bags: f.bags, Reduce: reduce, Out: f.pooled})
	if err != nil {
		t.Fatalf("GatherReduce: %v", err)
	}
	checkResult(t, res)
	return f.floats(f.pooled)
}

// checkPooledBits checks pooled floats against the reference bit for bit.
func checkPooledBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: table %d bag %d dim %d: got %v, want %v bit for bit (float32 accumulation in bag order)",
				what, i/(batchSize*dim), i/dim%batchSize, i%dim, got[i], want[i])
		}
	}
}

func checkResult(t *testing.T, res *kernel.Result) {
	t.Helper()
	if res == nil {
		t.Fatal("nil Result and no error")
	}
	if res.BytesRead <= 0 || res.BytesWritten <= 0 || res.FLOPs < 0 {
		t.Errorf("Result %+v: a call that read rows and wrote outputs must count bytes read and written (the cost model charges them)", *res)
	}
}
