package cpu

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/region/regiontest"
)

// Tensor Casting's Fig. 8 through the kernel: bag 0 pools rows 1, 2, 4 and
// bag 1 rows 0, 2. Casting (Alg. 2) gives castSrc [1,0,0,1,0], castDst
// [0,1,2,2,3], rows [0,1,2,4]: unique row u is the "bag" of batch bags
// castSrc[j] with castDst[j] = u. GatherReduce over the gradient matrix
// with those bags (Alg. 3) is expand-coalesce's output (Alg. 1), bit for
// bit, on the AVX2 and the Go loops.
func TestCastedGatherReduceFig8(t *testing.T) {
	const dim = 20 // an AVX2 block and a scalar tail
	for _, impl := range []string{`{"impl":"go"}`, ``} {
		k := configured(t, impl)
		a := regiontest.New(t, 1<<16)
		rng := rand.New(rand.NewPCG(8, 8))
		grads := make([]float32, 2*dim)
		for i := range grads {
			grads[i] = rng.Float32()*2 - 1
		}
		gr := a.Float32s(grads)

		// Alg. 1: expand-coalesce over the forward bags.
		tables := []kernel.Table{{Rows: 5, Dim: dim}}
		bags := kernel.Bags{Batch: 2, Indices: a.Int64s([]int64{1, 2, 4, 0, 2}), IndexStart: []int64{0}, Offsets: a.Int64s([]int64{0, 3, 5})}
		out := kernel.Coalesced{Rows: a.Alloc(5 * 8), Grads: a.Alloc(5 * dim * 4), RowStart: []int64{0}, GradStart: []int64{0}}
		ec, err := k.ExpandCoalesce(context.Background(), &kernel.ExpandCoalesceRequest{Tables: tables, Bags: bags, Grads: gr, Out: out})
		if err != nil {
			t.Fatal(err)
		}
		if ec.Counts[0] != 4 {
			t.Fatalf("%s: expand-coalesce found %d rows, want 4", impl, ec.Counts[0])
		}

		// Alg. 3: gather-reduce over the gradient matrix with the casted
		// index; casted bags u: [1], [0], [0 1], [0].
		casted := a.Alloc(4 * dim * 4)
		_, err = k.GatherReduce(context.Background(), &kernel.GatherReduceRequest{
			Tables: []kernel.Table{{Data: gr, Rows: 2, Dim: dim}},
			Bags:   kernel.Bags{Batch: 4, Indices: a.Int64s([]int64{1, 0, 0, 1, 0}), IndexStart: []int64{0}, Offsets: a.Int64s([]int64{0, 1, 2, 4, 5})},
			Reduce: kernel.Sum, Out: casted,
		})
		if err != nil {
			t.Fatal(err)
		}
		want, got := a.ReadFloat32s(out.Grads)[:4*dim], a.ReadFloat32s(casted)
		if !bitsEqual(got, want) {
			t.Errorf("%s: casted gather-reduce %v, expand-coalesce %v", impl, got, want)
		}
	}
}
