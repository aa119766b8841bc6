package cpu

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region/regiontest"
)

// withState widens every row of b to dim+StateFloats(opt) floats, the state
// random and positive (as accumulated squares are).
func withState(rng *rand.Rand, b *batch, opt kernel.Optimizer) (strides []int) {
	for t, dim := range b.dims {
		stride := dim + kernel.StateFloats(opt, dim)
		rows := len(b.rows[t]) / dim
		wide := make([]float32, rows*stride)
		for r := range rows {
			copy(wide[r*stride:], b.rows[t][r*dim:(r+1)*dim])
			for s := r*stride + dim; s < (r+1)*stride; s++ {
				wide[s] = rng.Float32()
			}
		}
		b.rows[t] = wide
		strides = append(strides, stride)
	}
	return strides
}

// referenceUpdate is expand-coalesce and the optimizer spelled out: for
// each row in first-use order, sum its expanded gradients in position
// order, then update as kernel.Optimizer documents.
func referenceUpdate(b *batch, strides []int, grads []float32, reduce kernel.Reduce, opt kernel.Optimizer, lr, eps float32) [][]float32 {
	out := make([][]float32, len(b.rows))
	at := 0
	for t := range b.rows {
		dim, stride := b.dims[t], strides[t]
		out[t] = slices.Clone(b.rows[t])
		sum := map[int64][]float32{}
		var order []int64
		for bag, ids := range b.bags[t] {
			for _, r := range ids {
				acc, ok := sum[r]
				if !ok {
					acc = make([]float32, dim)
					sum[r], order = acc, append(order, r)
				}
				for d := range acc {
					g := grads[at+bag*dim+d]
					if reduce == kernel.Mean {
						g /= float32(len(ids))
					}
					acc[d] += g
				}
			}
		}
		for _, r := range order {
			g := sum[r]
			w := out[t][int(r)*stride : (int(r)+1)*stride]
			switch opt {
			case kernel.SGD:
				for d := range g {
					w[d] -= float32(lr * g[d])
				}
			case kernel.Adagrad:
				for d := range g {
					w[dim+d] += float32(g[d] * g[d])
					w[d] -= float32(lr*g[d]) / (float32(math.Sqrt(float64(w[dim+d]))) + eps)
				}
			case kernel.RowWiseAdagrad:
				var p [8]float32
				for d := range g {
					p[d%8] += float32(g[d] * g[d])
				}
				sq := ((p[0] + p[4]) + (p[2] + p[6])) + ((p[1] + p[5]) + (p[3] + p[7]))
				w[dim] += sq / float32(dim)
				den := float32(math.Sqrt(float64(w[dim]))) + eps
				for d := range g {
					w[d] -= float32(lr*g[d]) / den
				}
			}
		}
		at += len(b.bags[t]) * dim
	}
	return out
}

// stridedLayout is batch.layout with each table's stride.
func stridedLayout(a *regiontest.Arena, b *batch, strides []int) ([]kernel.Table, kernel.Bags) {
	tables, bags := b.layout(a)
	for t := range tables {
		tables[t].Stride = strides[t]
		tables[t].Rows = int64(len(b.rows[t]) / strides[t])
	}
	return tables, bags
}

var optimizers = []kernel.Optimizer{kernel.SGD, kernel.Adagrad, kernel.RowWiseAdagrad}

// TestScatterOptimizers: every optimizer, under both reductions and both
// loop implementations, matches the reference bit for bit, state included.
func TestScatterOptimizers(t *testing.T) {
	for _, impl := range []string{`{"impl":"go"}`, `{}`} {
		for _, opt := range optimizers {
			for _, reduce := range []kernel.Reduce{kernel.Sum, kernel.Mean} {
				rng := rand.New(rand.NewPCG(31, uint64(opt)))
				b := randomBatch(rng, 4, 32, 50)
				strides := withState(rng, b, opt)
				grads := randomGrads(rng, pooledLen(b))
				want := referenceUpdate(b, strides, grads, reduce, opt, 0.3, 1e-8)
				a := regiontest.New(t, 1<<20)
				tables, bags := stridedLayout(a, b, strides)
				_, err := configured(t, impl).Scatter(context.Background(), &kernel.ScatterRequest{
					Tables: tables, Bags: bags, Reduce: reduce, Grads: a.Float32s(grads),
					Optimizer: opt, LearningRate: 0.3, Epsilon: 1e-8,
				})
				if err != nil {
					t.Fatal(err)
				}
				for tab := range tables {
					if got := a.ReadFloat32s(tables[tab].Data); !bitsEqual(got, want[tab]) {
						t.Fatalf("%s %s reduce %d table %d: rows differ from reference", impl, opt, reduce, tab)
					}
				}
			}
		}
	}
}

// TestExpandCoalesceApplyIsScatter: the two halves, through regions, end
// with the same bits as the fused Scatter; the coalesced rows are the
// unique rows, ascending.
func TestExpandCoalesceApplyIsScatter(t *testing.T) {
	ctx := context.Background()
	for _, opt := range optimizers {
		rng := rand.New(rand.NewPCG(41, uint64(opt)))
		b := randomBatch(rng, 5, 40, 30)
		strides := withState(rng, b, opt)
		grads := randomGrads(rng, pooledLen(b))
		k := configured(t, ``)

		a := regiontest.New(t, 1<<20)
		tables, bags := stridedLayout(a, b, strides)
		g := a.Float32s(grads)
		if _, err := k.Scatter(ctx, &kernel.ScatterRequest{Tables: tables, Bags: bags, Reduce: kernel.Mean, Grads: g, Optimizer: opt, LearningRate: 0.1, Epsilon: 1e-6}); err != nil {
			t.Fatal(err)
		}
		var fused [][]float32
		for _, tab := range tables {
			fused = append(fused, a.ReadFloat32s(tab.Data))
		}

		a2 := regiontest.New(t, 1<<20)
		tables, bags = stridedLayout(a2, b, strides)
		g = a2.Float32s(grads)
		capacity := make([]int64, len(tables))
		for tab, bs := range b.bags {
			for _, bag := range bs {
				capacity[tab] += int64(len(bag))
			}
		}
		rowStart, gradStart, rowBytes, gradBytes := kernel.CoalescedLayout(tables, capacity)
		c := kernel.Coalesced{Rows: a2.Alloc(max(rowBytes, 8)), Grads: a2.Alloc(max(gradBytes, 8)), RowStart: rowStart, GradStart: gradStart}
		ec, err := k.ExpandCoalesce(ctx, &kernel.ExpandCoalesceRequest{Tables: tables, Bags: bags, Reduce: kernel.Mean, Grads: g, Out: c})
		if err != nil {
			t.Fatal(err)
		}
		rows := a2.ReadInt64s(c.Rows)
		for tab := range tables {
			var want []int64
			for _, bag := range b.bags[tab] {
				want = append(want, bag...)
			}
			slices.Sort(want)
			want = slices.Compact(want)
			got := rows[rowStart[tab] : rowStart[tab]+ec.Counts[tab]]
			if !slices.Equal(got, want) {
				t.Fatalf("%s table %d: coalesced rows %v, want %v", opt, tab, got, want)
			}
		}
		c.Counts = ec.Counts
		if _, err := k.Apply(ctx, &kernel.ApplyRequest{Tables: tables, Coalesced: c, Optimizer: opt, LearningRate: 0.1, Epsilon: 1e-6}); err != nil {
			t.Fatal(err)
		}
		for tab := range tables {
			if !bitsEqual(a2.ReadFloat32s(tables[tab].Data), fused[tab]) {
				t.Fatalf("%s table %d: expand-coalesce + apply differs from scatter", opt, tab)
			}
		}
	}
}

// TestStateTravelsWithRow: a row moved to another slot of a wider table,
// state and all, ends with the same bits, state included.
func TestStateTravelsWithRow(t *testing.T) {
	for _, opt := range []kernel.Optimizer{kernel.Adagrad, kernel.RowWiseAdagrad} {
		rng := rand.New(rand.NewPCG(51, uint64(opt)))
		b := randomBatch(rng, 1, 64, 40)
		strides := withState(rng, b, opt)
		grads := randomGrads(rng, pooledLen(b))
		stride := strides[0]
		rows := len(b.rows[0]) / stride
		slot := rng.Perm(3 * rows)[:rows]
		moved := &batch{dims: b.dims, rows: [][]float32{make([]float32, 3*len(b.rows[0]))}, bags: [][][]int64{make([][]int64, len(b.bags[0]))}}
		for r := range rows {
			copy(moved.rows[0][slot[r]*stride:], b.rows[0][r*stride:(r+1)*stride])
		}
		for i, bag := range b.bags[0] {
			for _, r := range bag {
				moved.bags[0][i] = append(moved.bags[0][i], int64(slot[r]))
			}
		}
		a := regiontest.New(t, 1<<20)
		k := configured(t, ``)
		for _, x := range []*batch{b, moved} {
			tables, bags := stridedLayout(a, x, strides)
			if _, err := k.Scatter(context.Background(), &kernel.ScatterRequest{
				Tables: tables, Bags: bags, Reduce: kernel.Sum, Grads: a.Float32s(grads), Optimizer: opt, LearningRate: 0.1, Epsilon: 1e-8,
			}); err != nil {
				t.Fatal(err)
			}
			x.rows[0] = a.ReadFloat32s(tables[0].Data)
		}
		for r := range rows {
			if !bitsEqual(b.rows[0][r*stride:(r+1)*stride], moved.rows[0][slot[r]*stride:(slot[r]+1)*stride]) {
				t.Fatalf("%s: row %d differs after moving", opt, r)
			}
		}
	}
}

func TestOptimizerRejects(t *testing.T) {
	ctx := context.Background()
	a := regiontest.New(t, 1<<16)
	b := &batch{rows: [][]float32{{1, 2, 3, 4}}, dims: []int{2}, bags: [][][]int64{{{0, 1}, {1}}}}
	tables, bags := b.layout(a)
	grads := a.Float32s([]float32{1, 1, 1, 1})
	k := configured(t, ``)
	for _, opt := range []kernel.Optimizer{kernel.Adagrad, kernel.RowWiseAdagrad} {
		if _, err := k.Scatter(ctx, &kernel.ScatterRequest{Tables: tables, Bags: bags, Grads: grads, Optimizer: opt, LearningRate: 1}); !errors.Is(err, plugin.ErrInvalidRequest) {
			t.Errorf("%s without room for state: %v", opt, err)
		}
	}
	wide := slices.Clone(tables)
	wide[0].Stride, wide[0].Rows = 3, 1
	if _, err := k.Scatter(ctx, &kernel.ScatterRequest{Tables: wide, Bags: bags, Grads: grads, Optimizer: kernel.Adagrad, LearningRate: 1}); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Errorf("adagrad with stride 3 for dim 2: %v", err)
	}
	narrow := slices.Clone(tables)
	narrow[0].Stride = 1
	if _, err := k.GatherReduce(ctx, &kernel.GatherReduceRequest{Tables: narrow, Bags: bags, Out: a.Alloc(16)}); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Errorf("stride < dim: %v", err)
	}
	wide[0].Stride, wide[0].Rows = 3, 1
	if _, err := k.Scatter(ctx, &kernel.ScatterRequest{Tables: wide, Bags: bags, Grads: grads, Optimizer: kernel.RowWiseAdagrad, LearningRate: 1, Epsilon: -1}); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Errorf("negative epsilon: %v", err)
	}

	c := kernel.Coalesced{Rows: a.Int64s([]int64{0, 1, 1}), Grads: a.Float32s(make([]float32, 6)), RowStart: []int64{0}, GradStart: []int64{0}}
	if _, err := k.Apply(ctx, &kernel.ApplyRequest{Tables: tables, Coalesced: c, LearningRate: 1}); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Errorf("apply without counts: %v", err)
	}
	c.Counts = []int64{4}
	if _, err := k.Apply(ctx, &kernel.ApplyRequest{Tables: tables, Coalesced: c, LearningRate: 1}); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Errorf("apply with more rows than the refs hold: %v", err)
	}
	c.Counts = []int64{3}
	if _, err := k.Apply(ctx, &kernel.ApplyRequest{Tables: tables[:1], Coalesced: c, LearningRate: 1}); err != nil {
		t.Errorf("apply: %v", err)
	}
	c.Rows = a.Int64s([]int64{0, 2, 1})
	if _, err := k.Apply(ctx, &kernel.ApplyRequest{Tables: tables, Coalesced: c, LearningRate: 1}); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Errorf("apply to a row beyond the table: %v", err)
	}
	// Row ids past 2³² do not fit expand's sort keys: rows 1 and 2³²+1
	// would be coalesced as one. The table has no data region (16 GiB), so
	// Scatter would refuse it anyway: each refusal must be the row limit's.
	huge := []kernel.Table{{Rows: 1<<32 + 2, Dim: 1}}
	rowLimit := func(err error) bool {
		return errors.Is(err, plugin.ErrInvalidRequest) && strings.Contains(err.Error(), "at most 2³² rows")
	}
	hugeBags := kernel.Bags{Batch: 2, Indices: a.Int64s([]int64{1, 1<<32 + 1}), IndexStart: []int64{0}, Offsets: a.Int64s([]int64{0, 1, 2})}
	hugeOut := kernel.Coalesced{Rows: a.Alloc(16), Grads: a.Alloc(8), RowStart: []int64{0}, GradStart: []int64{0}}
	if _, err := k.ExpandCoalesce(ctx, &kernel.ExpandCoalesceRequest{Tables: huge, Bags: hugeBags, Grads: a.Float32s([]float32{1, 2}), Out: hugeOut}); !rowLimit(err) {
		t.Errorf("expand-coalesce of a table of 2³²+2 rows: %v", err)
	}
	if _, err := k.Scatter(ctx, &kernel.ScatterRequest{Tables: huge, Bags: hugeBags, Grads: a.Float32s([]float32{1, 2}), LearningRate: 1}); !rowLimit(err) {
		t.Errorf("scatter to a table of 2³²+2 rows: %v", err)
	}
	two := []kernel.Table{tables[0], tables[0]}
	overlapping := kernel.Coalesced{Rows: a.Alloc(64), Grads: a.Alloc(64), RowStart: []int64{0, 1}, GradStart: []int64{0, 4}}
	if _, err := k.ExpandCoalesce(ctx, &kernel.ExpandCoalesceRequest{
		Tables: two, Bags: kernel.Bags{Batch: 2, Indices: bags.Indices, IndexStart: []int64{0, 0}, Offsets: a.Int64s([]int64{0, 2, 3, 0, 2, 3})},
		Grads: a.Alloc(32), Out: overlapping,
	}); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Errorf("expand-coalesce into overlapping blocks: %v", err)
	}
}

func TestImplOption(t *testing.T) {
	err := New().Configure(context.Background(), plugin.Setup{Options: []byte(`{"impl":"sse"}`)})
	if !errors.Is(err, plugin.ErrInvalidConfig) {
		t.Errorf("impl sse: %v", err)
	}
	err = New().Configure(context.Background(), plugin.Setup{Options: []byte(`{"prefetch":-1}`)})
	if !errors.Is(err, plugin.ErrInvalidConfig) {
		t.Errorf("prefetch -1: %v", err)
	}
	err = New().Configure(context.Background(), plugin.Setup{Options: []byte(`{"impl":"avx2"}`)})
	if haveAVX2 != (err == nil) {
		t.Errorf("impl avx2 with AVX2 %v: %v", haveAVX2, err)
	}
}
