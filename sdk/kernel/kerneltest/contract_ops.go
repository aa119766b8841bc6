package kerneltest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// runStrideContract checks that rows Stride floats apart are read and
// written at their stride and that the floats past Dim are left alone by
// gather-reduce and SGD.
func runStrideContract(t *testing.T, ctx context.Context, ops []string, configured func(*testing.T) kernel.Kernel) {
	const stride = dim + 3
	if slices.Contains(ops, kernel.OpGatherReduce) {
		t.Run("GatherReduceStride", func(t *testing.T) {
			k, f := configured(t), newStridedFixture(t, 11, stride)
			want := referencePool(f, f.rows(), kernel.Sum)
			checkPooledBits(t, fmt.Sprintf("stride %d", stride), gatherReduce(t, ctx, k, f, kernel.Sum), want)
		})
	}
	if slices.Contains(ops, kernel.OpScatter) {
		t.Run("ScatterStride", func(t *testing.T) {
			k, f := configured(t), newStridedFixture(t, 12, stride)
			grads := f.floats(f.pooled)
			for i := range grads {
				grads[i] = float32(math.Cos(float64(i)))
			}
			before := f.rows()
			want := referenceScatter(f, before, grads, kernel.Sum, learningRate)
			if _, err := k.Scatter(ctx, &kernel.ScatterRequest{Tables: f.tables, Bags: f.bags, Grads: f.pooled, LearningRate: learningRate}); err != nil {
				t.Fatalf("Scatter: %v", err)
			}
			compareRows(t, "stride", f.rows(), want, before, stride)
		})
	}
}

// runOptimizerContract checks Adagrad and row-wise Adagrad through Scatter,
// their state living in each row past Dim. A kernel may refuse an
// optimizer with plugin.ErrUnsupported; one it accepts must be right.
func runOptimizerContract(t *testing.T, ctx context.Context, ops []string, configured func(*testing.T) kernel.Kernel) {
	if !slices.Contains(ops, kernel.OpScatter) {
		return
	}
	for _, opt := range []kernel.Optimizer{kernel.Adagrad, kernel.RowWiseAdagrad} {
		t.Run(fmt.Sprintf("Scatter_%s", opt), func(t *testing.T) {
			stride := dim + kernel.StateFloats(opt, dim)
			k, f := configured(t), newStridedFixture(t, 13+uint64(opt), stride)
			grads := f.floats(f.pooled)
			for i := range grads {
				grads[i] = float32(math.Sin(float64(3 * i)))
			}
			before := f.rows()
			want := referenceUpdate(f, before, grads, kernel.Mean, opt, learningRate, 1e-6)
			_, err := k.Scatter(ctx, &kernel.ScatterRequest{
				Tables: f.tables, Bags: f.bags, Reduce: kernel.Mean, Grads: f.pooled,
				Optimizer: opt, LearningRate: learningRate, Epsilon: 1e-6,
			})
			if errors.Is(err, plugin.ErrUnsupported) {
				t.Skipf("%s: %v", opt, err)
			}
			if err != nil {
				t.Fatalf("Scatter: %v", err)
			}
			compareRows(t, opt.String(), f.rows(), want, before, stride)

			narrow := newFixture(t, 14)
			_, err = k.Scatter(ctx, &kernel.ScatterRequest{Tables: narrow.tables, Bags: narrow.bags, Grads: narrow.pooled, Optimizer: opt, LearningRate: learningRate})
			if !errors.Is(err, plugin.ErrInvalidRequest) {
				t.Errorf("%s on rows without room for state: err = %v, want plugin.ErrInvalidRequest", opt, err)
			}
		})
	}
}

// runSplitContract checks ExpandCoalesce and Apply: the coalesced rows are
// each table's unique rows, ascending, with their gradients summed in
// position order, and Apply after ExpandCoalesce is Scatter.
func runSplitContract(t *testing.T, ctx context.Context, ops []string, configured func(*testing.T) kernel.Kernel) {
	hasEC, hasApply := slices.Contains(ops, kernel.OpExpandCoalesce), slices.Contains(ops, kernel.OpApply)
	if !hasEC {
		t.Run("ExpandCoalesceUnsupported", func(t *testing.T) {
			f := newFixture(t, 15)
			_, err := configured(t).ExpandCoalesce(ctx, &kernel.ExpandCoalesceRequest{Tables: f.tables, Bags: f.bags, Grads: f.pooled, Out: f.coalesced})
			if !errors.Is(err, plugin.ErrUnsupported) {
				t.Fatalf("ExpandCoalesce not in Info.Ops: err = %v, want plugin.ErrUnsupported", err)
			}
		})
	}
	if !hasApply {
		t.Run("ApplyUnsupported", func(t *testing.T) {
			f := newFixture(t, 16)
			c := f.coalesced
			c.Counts = make([]int64, len(f.tables))
			_, err := configured(t).Apply(ctx, &kernel.ApplyRequest{Tables: f.tables, Coalesced: c, LearningRate: learningRate})
			if !errors.Is(err, plugin.ErrUnsupported) {
				t.Fatalf("Apply not in Info.Ops: err = %v, want plugin.ErrUnsupported", err)
			}
		})
	}
	if !hasEC {
		return
	}
	for _, reduce := range []kernel.Reduce{kernel.Sum, kernel.Mean} {
		t.Run(fmt.Sprintf("ExpandCoalesce_%s", map[kernel.Reduce]string{kernel.Sum: "Sum", kernel.Mean: "Mean"}[reduce]), func(t *testing.T) {
			k, f := configured(t), newFixture(t, 17+uint64(reduce))
			grads := f.floats(f.pooled)
			for i := range grads {
				grads[i] = float32(math.Sin(float64(i) / 3))
			}
			c := f.coalesced
			res, err := k.ExpandCoalesce(ctx, &kernel.ExpandCoalesceRequest{Tables: f.tables, Bags: f.bags, Reduce: reduce, Grads: f.pooled, Out: c})
			if err != nil {
				t.Fatalf("ExpandCoalesce: %v", err)
			}
			if res == nil || len(res.Counts) != len(f.tables) {
				t.Fatalf("ExpandCoalesce: result %+v, want a count per table", res)
			}
			checkResult(t, &res.Result)
			wantRows, wantSums := referenceCoalesce(f, grads, reduce)
			rows, sums := f.int64s(c.Rows), f.floats(c.Grads)
			for ti := range f.tables {
				got := rows[c.RowStart[ti] : c.RowStart[ti]+res.Counts[ti]]
				if !slices.Equal(got, wantRows[ti]) {
					t.Fatalf("table %d: coalesced rows %v, want %v (unique, ascending)", ti, got, wantRows[ti])
				}
				for i := range got {
					for d := range dim {
						g := sums[c.GradStart[ti]+int64(i*dim+d)]
						if want := wantSums[ti][i][d]; math.Float32bits(g) != math.Float32bits(want) {
							t.Fatalf("table %d row %d dim %d: coalesced %v, want %v bit for bit (position order)", ti, got[i], d, g, want)
						}
					}
				}
			}
			if !hasApply {
				return
			}
			before := f.rows()
			want := referenceScatter(f, before, grads, reduce, learningRate)
			c.Counts = res.Counts
			ares, err := k.Apply(ctx, &kernel.ApplyRequest{Tables: f.tables, Coalesced: c, Optimizer: kernel.SGD, LearningRate: learningRate})
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			checkResult(t, ares)
			compareRows(t, "apply", f.rows(), want, before, dim)
		})
	}
}

// compareRows checks every float of every table against the reference
// within rounding, and that floats the reference leaves alone stay put.
func compareRows(t *testing.T, what string, got, want, before [][]float32, stride int) {
	t.Helper()
	for ti := range want {
		for i := range want[ti] {
			row, d := i/stride, i%stride
			if want[ti][i] == before[ti][i] && got[ti][i] != before[ti][i] {
				t.Fatalf("%s: table %d row %d float %d: should not change, yet went from %v to %v", what, ti, row, d, before[ti][i], got[ti][i])
			}
			if !near(got[ti][i], want[ti][i]) {
				t.Fatalf("%s: table %d row %d float %d: got %v, want %v (was %v)", what, ti, row, d, got[ti][i], want[ti][i], before[ti][i])
			}
		}
	}
}
