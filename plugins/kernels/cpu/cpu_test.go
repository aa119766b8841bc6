package cpu

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
	"github.com/flowrun/flowrun/sdk/region/regiontest"
)

func configured(t testing.TB, opts string) kernel.Kernel {
	t.Helper()
	k := New()
	if err := k.Configure(context.Background(), plugin.Setup{Options: json.RawMessage(opts)}); err != nil {
		t.Fatal(err)
	}
	return k
}

// batch is a test batch: tables and bags in plain slices, laid out in an
// arena on demand.
type batch struct {
	rows [][]float32 // per table, rows*dim
	dims []int
	bags [][][]int64 // [table][bag] -> row ids
}

func (b *batch) layout(a *regiontest.Arena) ([]kernel.Table, kernel.Bags) {
	B := len(b.bags[0])
	var indices, offsets, starts []int64
	tables := make([]kernel.Table, len(b.rows))
	for t := range b.rows {
		tables[t] = kernel.Table{Data: a.Float32s(b.rows[t]), Rows: int64(len(b.rows[t]) / b.dims[t]), Dim: b.dims[t]}
		starts = append(starts, int64(len(indices)))
		offsets = append(offsets, 0)
		var n int64
		for _, bag := range b.bags[t] {
			indices = append(indices, bag...)
			n += int64(len(bag))
			offsets = append(offsets, n)
		}
	}
	return tables, kernel.Bags{Batch: B, Indices: a.Int64s(indices), IndexStart: starts, Offsets: a.Int64s(offsets)}
}

func pooledLen(b *batch) int {
	n := 0
	for _, d := range b.dims {
		n += d * len(b.bags[0])
	}
	return n
}

func TestGatherReduce(t *testing.T) {
	k := configured(t, ``)
	a := regiontest.New(t, 1<<16)
	b := &batch{
		rows: [][]float32{{1, 2, 10, 20, 100, 200}, {1, 2, 3}},
		dims: []int{2, 1},
		bags: [][][]int64{{{0, 2, 2}, {}}, {{1}, {0, 1, 2}}},
	}
	tables, bags := b.layout(a)
	for _, tc := range []struct {
		reduce kernel.Reduce
		want   []float32
	}{
		{kernel.Sum, []float32{201, 402, 0, 0, 2, 6}},
		{kernel.Mean, []float32{67, 134, 0, 0, 2, 2}},
	} {
		out := a.Alloc(4 * int64(pooledLen(b)))
		res, err := k.GatherReduce(context.Background(), &kernel.GatherReduceRequest{Tables: tables, Bags: bags, Reduce: tc.reduce, Out: out})
		if err != nil {
			t.Fatal(err)
		}
		if got := a.ReadFloat32s(out); !slices.Equal(got, tc.want) {
			t.Errorf("reduce %d: out %v, want %v", tc.reduce, got, tc.want)
		}
		// 7 lookups: 3 of dim 2 and 4 of dim 1; offsets 2 tables × 3.
		wantRead := int64(7*8 + 3*2*4 + 4*1*4 + 2*3*8)
		if res.BytesRead != wantRead || res.BytesWritten != 6*4 {
			t.Errorf("reduce %d: bytes %d/%d, want %d/%d", tc.reduce, res.BytesRead, res.BytesWritten, wantRead, 6*4)
		}
		wantFLOPs := int64(3*2 + 4*1)
		if tc.reduce == kernel.Mean {
			wantFLOPs += 2 + 1 + 1 // one division per element of each non-empty bag
		}
		if res.FLOPs != wantFLOPs {
			t.Errorf("reduce %d: flops %d, want %d", tc.reduce, res.FLOPs, wantFLOPs)
		}
	}
}

// referenceScatter is expand-coalesce spelled out: for each row in
// ascending order, add its expanded gradients in position order.
func referenceScatter(b *batch, grads []float32, reduce kernel.Reduce, lr float32) [][]float32 {
	out := make([][]float32, len(b.rows))
	at := 0
	for t := range b.rows {
		dim := b.dims[t]
		out[t] = slices.Clone(b.rows[t])
		type exp struct {
			row int64
			g   []float32
		}
		var expanded []exp
		for bag, ids := range b.bags[t] {
			g := grads[at+bag*dim : at+(bag+1)*dim]
			for _, r := range ids {
				e := exp{row: r, g: make([]float32, dim)}
				for d := range g {
					e.g[d] = g[d]
					if reduce == kernel.Mean {
						e.g[d] = g[d] / float32(len(ids))
					}
				}
				expanded = append(expanded, e)
			}
		}
		for r := int64(0); r < int64(len(b.rows[t])/dim); r++ {
			acc := make([]float32, dim)
			seen := false
			for _, e := range expanded {
				if e.row == r {
					seen = true
					for d := range acc {
						acc[d] += e.g[d]
					}
				}
			}
			if seen {
				for d := range acc {
					out[t][int(r)*dim+d] -= float32(lr * acc[d])
				}
			}
		}
		at += len(b.bags[t]) * dim
	}
	return out
}

func randomBatch(rng *rand.Rand, tables, batchSize, rows int) *batch {
	b := &batch{}
	for range tables {
		dim := 1 + rng.IntN(8)
		data := make([]float32, rows*dim)
		for i := range data {
			data[i] = rng.Float32()*2 - 1
		}
		bags := make([][]int64, batchSize)
		for i := range bags {
			for range rng.IntN(6) {
				bags[i] = append(bags[i], int64(rng.IntN(1+rng.IntN(rows)))) // skewed: duplicates
			}
		}
		b.rows, b.dims, b.bags = append(b.rows, data), append(b.dims, dim), append(b.bags, bags)
	}
	return b
}

func randomGrads(rng *rand.Rand, n int) []float32 {
	g := make([]float32, n)
	for i := range g {
		g[i] = rng.Float32()*2 - 1
	}
	return g
}

func TestScatterMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, reduce := range []kernel.Reduce{kernel.Sum, kernel.Mean} {
		b := randomBatch(rng, 4, 32, 50)
		grads := randomGrads(rng, pooledLen(b))
		want := referenceScatter(b, grads, reduce, 0.3)
		a := regiontest.New(t, 1<<20)
		tables, bags := b.layout(a)
		_, err := configured(t, ``).Scatter(context.Background(), &kernel.ScatterRequest{
			Tables: tables, Bags: bags, Reduce: reduce, Grads: a.Float32s(grads), Optimizer: kernel.SGD, LearningRate: 0.3,
		})
		if err != nil {
			t.Fatal(err)
		}
		for tab := range tables {
			if got := a.ReadFloat32s(tables[tab].Data); !bitsEqual(got, want[tab]) {
				t.Fatalf("reduce %d table %d: rows differ from reference", reduce, tab)
			}
		}
	}
}

func TestScatterCounts(t *testing.T) {
	a := regiontest.New(t, 1<<16)
	b := &batch{rows: [][]float32{{0, 0, 0, 0, 0, 0}}, dims: []int{2}, bags: [][][]int64{{{0, 2, 2}, {2}}}}
	tables, bags := b.layout(a)
	res, err := configured(t, ``).Scatter(context.Background(), &kernel.ScatterRequest{
		Tables: tables, Bags: bags, Reduce: kernel.Mean, Grads: a.Float32s([]float32{3, 6, 1, 1}), LearningRate: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Row 0 gets (1,2); row 2 gets 2×(1,2) + (1,1) = (3,5).
	if got, want := a.ReadFloat32s(tables[0].Data), []float32{-1, -2, 0, 0, -3, -5}; !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	// offsets 3×8, grads 2×2×4, indices 4×8, 2 unique rows read and written.
	// FLOPs: each non-empty bag's gradient divided once (2 bags × 2), 4
	// expanded adds × 2, and 2 updates × 2 × 2.
	want := kernel.Result{BytesRead: 24 + 16 + 32 + 2*2*4, BytesWritten: 2 * 2 * 4, FLOPs: 2*2 + 4*2 + 2*2*2}
	if *res != want {
		t.Fatalf("result %+v, want %+v", *res, want)
	}
}

// TestScatterIndependentOfPlacement is the property flowrun's exactness
// rests on: the update of a row does not depend on where the row lives (its
// home table or any cache slot), only on the lookups.
func TestScatterIndependentOfPlacement(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	b := randomBatch(rng, 1, 64, 40)
	grads := randomGrads(rng, pooledLen(b))
	dim := b.dims[0]

	// Move every row to a random slot of a larger table, as a cache would.
	// A row's gradients are coalesced in position order whatever its label,
	// so every row must end with the same bits.
	rows := len(b.rows[0]) / dim
	slot := rng.Perm(2 * rows)[:rows]
	moved := &batch{dims: b.dims, rows: [][]float32{make([]float32, 2*len(b.rows[0]))}}
	for r := range rows {
		copy(moved.rows[0][slot[r]*dim:], b.rows[0][r*dim:(r+1)*dim])
	}
	moved.bags = [][][]int64{make([][]int64, len(b.bags[0]))}
	for i, bag := range b.bags[0] {
		for _, r := range bag {
			moved.bags[0][i] = append(moved.bags[0][i], int64(slot[r]))
		}
	}
	a := regiontest.New(t, 1<<20)
	k := configured(t, ``)
	for _, x := range []*batch{b, moved} {
		tables, bags := x.layout(a)
		if _, err := k.Scatter(context.Background(), &kernel.ScatterRequest{
			Tables: tables, Bags: bags, Reduce: kernel.Mean, Grads: a.Float32s(grads), LearningRate: 0.1,
		}); err != nil {
			t.Fatal(err)
		}
		x.rows[0] = a.ReadFloat32s(tables[0].Data)
	}
	for r := range rows {
		if !bitsEqual(b.rows[0][r*dim:(r+1)*dim], moved.rows[0][slot[r]*dim:(slot[r]+1)*dim]) {
			t.Fatalf("row %d differs after moving", r)
		}
	}
}

func TestParallelIsBitIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	b := randomBatch(rng, 16, 64, 100)
	grads := randomGrads(rng, pooledLen(b))
	var outs [][]float32
	for _, workers := range []string{`{"workers":1}`, `{"workers":8}`} {
		k := configured(t, workers)
		a := regiontest.New(t, 1<<20)
		tables, bags := b.layout(a)
		out := a.Alloc(4 * int64(pooledLen(b)))
		if _, err := k.GatherReduce(context.Background(), &kernel.GatherReduceRequest{Tables: tables, Bags: bags, Reduce: kernel.Mean, Out: out}); err != nil {
			t.Fatal(err)
		}
		if _, err := k.Scatter(context.Background(), &kernel.ScatterRequest{Tables: tables, Bags: bags, Grads: a.Float32s(grads), LearningRate: 0.5}); err != nil {
			t.Fatal(err)
		}
		all := a.ReadFloat32s(out)
		for _, tab := range tables {
			all = append(all, a.ReadFloat32s(tab.Data)...)
		}
		outs = append(outs, all)
	}
	if !bitsEqual(outs[0], outs[1]) {
		t.Fatal("workers=8 differs from workers=1")
	}
}

// Two tables that are the same memory must be updated one after the other,
// as if there were one table with both tables' lookups.
func TestAliasedTablesRunInOrder(t *testing.T) {
	a := regiontest.New(t, 1<<16)
	data := a.Float32s([]float32{1, 1})
	tables := []kernel.Table{{Data: data, Rows: 2, Dim: 1}, {Data: data, Rows: 2, Dim: 1}}
	bags := kernel.Bags{Batch: 1, Indices: a.Int64s([]int64{0, 0}), IndexStart: []int64{0, 1}, Offsets: a.Int64s([]int64{0, 1, 0, 1})}
	k := configured(t, `{"workers":4}`)
	if _, err := k.Scatter(context.Background(), &kernel.ScatterRequest{Tables: tables, Bags: bags, Grads: a.Float32s([]float32{1, 2}), LearningRate: 1}); err != nil {
		t.Fatal(err)
	}
	if got := a.ReadFloat32s(data); !slices.Equal(got, []float32{-2, 1}) {
		t.Fatalf("rows %v, want [-2 1]", got)
	}
}

func TestRejects(t *testing.T) {
	ctx := context.Background()
	a := regiontest.New(t, 1<<16)
	b := &batch{rows: [][]float32{{1, 2, 3, 4}}, dims: []int{2}, bags: [][][]int64{{{0, 1}, {1}}}}
	tables, bags := b.layout(a)
	out := a.Alloc(16)
	grads := a.Float32s([]float32{1, 1, 1, 1})

	if _, err := New().GatherReduce(ctx, &kernel.GatherReduceRequest{Tables: tables, Bags: bags, Out: out}); !errors.Is(err, plugin.ErrNotConfigured) {
		t.Errorf("before configure: %v", err)
	}
	if err := New().Configure(ctx, plugin.Setup{Options: json.RawMessage(`{"threads":2}`)}); !errors.Is(err, plugin.ErrInvalidConfig) {
		t.Errorf("unknown option: %v", err)
	}
	k := configured(t, ``)
	with := func(f func(ts []kernel.Table, bg *kernel.Bags, out *region.Ref)) (error, error) {
		ts := slices.Clone(tables)
		bg := bags
		bg.IndexStart = slices.Clone(bags.IndexStart)
		o := out
		f(ts, &bg, &o)
		_, gerr := k.GatherReduce(ctx, &kernel.GatherReduceRequest{Tables: ts, Bags: bg, Out: o})
		_, serr := k.Scatter(ctx, &kernel.ScatterRequest{Tables: ts, Bags: bg, Grads: o, LearningRate: 1})
		return gerr, serr
	}
	cases := map[string]func(ts []kernel.Table, bg *kernel.Bags, out *region.Ref){
		"row beyond table":     func(ts []kernel.Table, _ *kernel.Bags, _ *region.Ref) { ts[0].Rows = 1; ts[0].Data.Length = 8 },
		"table data too small": func(ts []kernel.Table, _ *kernel.Bags, _ *region.Ref) { ts[0].Data.Length = 12 },
		"zero dim":             func(ts []kernel.Table, _ *kernel.Bags, _ *region.Ref) { ts[0].Dim = 0 },
		"out too small":        func(_ []kernel.Table, _ *kernel.Bags, o *region.Ref) { o.Length = 12 },
		"out missing":          func(_ []kernel.Table, _ *kernel.Bags, o *region.Ref) { *o = region.Ref{} },
		"out misaligned":       func(_ []kernel.Table, _ *kernel.Bags, o *region.Ref) { o.Offset += 2 },
		"index start count":    func(_ []kernel.Table, bg *kernel.Bags, _ *region.Ref) { bg.IndexStart = nil },
		"index start past end": func(_ []kernel.Table, bg *kernel.Bags, _ *region.Ref) { bg.IndexStart[0] = 2 },
		"batch larger":         func(_ []kernel.Table, bg *kernel.Bags, _ *region.Ref) { bg.Batch = 5 },
		"no such region":       func(ts []kernel.Table, _ *kernel.Bags, _ *region.Ref) { ts[0].Data.Region = region.Prefix + "nope" },
	}
	for name, f := range cases {
		gerr, serr := with(f)
		if !errors.Is(gerr, plugin.ErrInvalidRequest) || !errors.Is(serr, plugin.ErrInvalidRequest) {
			t.Errorf("%s: gather %v, scatter %v; want ErrInvalidRequest", name, gerr, serr)
		}
	}
	decreasing := a.Int64s([]int64{0, 2, 1})
	if _, err := k.GatherReduce(ctx, &kernel.GatherReduceRequest{Tables: tables, Bags: kernel.Bags{Batch: 2, Indices: bags.Indices, IndexStart: []int64{0}, Offsets: decreasing}, Out: out}); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Errorf("decreasing offsets: %v", err)
	}
	if _, err := k.GatherReduce(ctx, &kernel.GatherReduceRequest{Tables: tables, Bags: bags, Reduce: 7, Out: out}); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Errorf("unknown reduce: %v", err)
	}
	if _, err := k.Scatter(ctx, &kernel.ScatterRequest{Tables: tables, Bags: bags, Grads: grads, Optimizer: 3}); !errors.Is(err, plugin.ErrUnsupported) {
		t.Errorf("unknown optimizer: %v", err)
	}
	if _, err := k.Scatter(ctx, &kernel.ScatterRequest{Tables: tables, Bags: bags, Grads: grads, LearningRate: float32(math.NaN())}); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Errorf("NaN learning rate: %v", err)
	}
	if got := a.ReadFloat32s(tables[0].Data); !slices.Equal(got, []float32{1, 2, 3, 4}) {
		t.Errorf("rejected requests changed the table: %v", got)
	}
}

func TestInfo(t *testing.T) {
	info, err := New().Info(context.Background())
	if err != nil || info.Kind != plugin.KindKernel || !slices.Equal(info.Ops, []string{kernel.OpGatherReduce, kernel.OpScatter, kernel.OpExpandCoalesce, kernel.OpApply, kernel.OpQuantize, kernel.OpDequantize}) {
		t.Fatalf("info %+v, %v", info, err)
	}
}

func bitsEqual(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

func BenchmarkScatter(bm *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	b := randomBatch(rng, 8, 2048, 100000)
	grads := randomGrads(rng, pooledLen(b))
	a := regiontest.New(bm, 64<<20)
	tables, bags := b.layout(a)
	g := a.Float32s(grads)
	k := configured(bm, ``)
	bm.ResetTimer()
	for range bm.N {
		if _, err := k.Scatter(context.Background(), &kernel.ScatterRequest{Tables: tables, Bags: bags, Grads: g, LearningRate: 0.01}); err != nil {
			bm.Fatal(err)
		}
	}
}
