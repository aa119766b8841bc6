package ncf

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
	"github.com/flowrun/flowrun/sdk/region/regiontest"
)

func configured(t *testing.T, tables, dim, dense int, opts string) *ncf {
	t.Helper()
	tabs := make([]plugin.Table, tables)
	for i := range tabs {
		tabs[i] = plugin.Table{Rows: 100, Dim: dim}
	}
	m := New().(*ncf)
	err := m.Configure(context.Background(), plugin.Setup{Seed: 3, Tables: tabs, BatchSize: 8, Lookups: 1, DenseFeatures: dense, Options: json.RawMessage(opts)})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// batch is a step's arrays in one region: pooled [tables][B][dim], dense,
// labels, the pooled gradient and scores.
type batch struct {
	pooled, dense, labels, grad, scores []float32
	req                                 *model.StepRequest
}

func newBatch(t *testing.T, r *rand.Rand, B, tables, dim, dense int) *batch {
	t.Helper()
	n := []int{tables * B * dim, B * dense, B, tables * B * dim, B}
	var total int64
	for _, k := range n {
		total += 4*int64(k) + 64
	}
	arena := regiontest.New(t, total)
	var refs []region.Ref
	var arrs [][]float32
	for _, k := range n {
		ref := arena.Alloc(4 * int64(k))
		refs = append(refs, ref)
		arrs = append(arrs, region.Float32s(arena.Bytes(ref)))
	}
	b := &batch{pooled: arrs[0], dense: arrs[1], labels: arrs[2], grad: arrs[3], scores: arrs[4]}
	for i := range b.pooled {
		b.pooled[i] = float32(r.NormFloat64() * 0.5)
	}
	for i := range b.dense {
		b.dense[i] = float32(r.NormFloat64())
	}
	for i := range b.labels {
		b.labels[i] = float32(r.IntN(2))
	}
	b.req = &model.StepRequest{Batch: B, Pooled: refs[0], Dense: refs[1], Labels: refs[2], PooledGrad: refs[3], Scores: refs[4]}
	return b
}

// The pooled gradient is the loss's derivative: central differences of
// the forward loss against every pooled value of a small batch, with
// side tables and dense features (whose GMF factors get no gradient).
func TestPooledGradient(t *testing.T) {
	const B, T, D, F = 4, 3, 6, 2
	m := configured(t, T, D, F, `{"layers": [5, 3], "gmf_dim": 2}`)
	b := newBatch(t, rand.New(rand.NewPCG(1, 2)), B, T, D, F)
	ctx := context.Background()
	loss := func() float64 {
		req := *b.req
		req.Train = false
		res, err := m.Step(ctx, &req)
		if err != nil {
			t.Fatal(err)
		}
		return res.Loss
	}
	// Train false leaves the model alone; a train step computes the
	// gradient with the same weights, then updates them: take the gradient
	// from a copy.
	saved, _ := m.State(ctx)
	req := *b.req
	req.Train = true
	if _, err := m.Step(ctx, &req); err != nil {
		t.Fatal(err)
	}
	grad := slices.Clone(b.grad)
	if err := m.SetState(ctx, saved); err != nil {
		t.Fatal(err)
	}
	const h = 1e-2
	for i := range b.pooled {
		x := b.pooled[i]
		b.pooled[i] = x + h
		up := loss()
		b.pooled[i] = x - h
		down := loss()
		b.pooled[i] = x
		num := (up - down) / (2 * h)
		tab, k := i/(B*D), i%D
		if tab >= 2 && k < 2 && grad[i] != 0 {
			t.Errorf("pooled %d (table %d, a GMF factor of a side table): gradient %v, want 0", i, tab, grad[i])
		}
		if math.Abs(num-float64(grad[i])) > 2e-3+0.02*math.Abs(num) {
			t.Errorf("pooled %d: gradient %v, numeric %v", i, grad[i], num)
		}
	}
}

// NeuMF's shape on two tables: the tower takes the user's and item's MLP
// factors, the output layer the GMF product and the tower's last layer;
// the layers reported are those products, whose FLOPs are the forward
// products' share of the count.
func TestShapes(t *testing.T) {
	m := configured(t, 2, 16, 0, `{"layers": [16, 8]}`)
	want := []device.Layer{{M: 10, K: 16, N: 16}, {M: 10, K: 16, N: 8}, {M: 10, K: 16, N: 1}}
	if got := m.shapes(10); !slices.Equal(got, want) {
		t.Fatalf("layers %v, want %v", got, want)
	}
	var prod int64
	for _, l := range want {
		prod += l.FLOPs()
	}
	// + GMF products, biases, ReLUs, sigmoid.
	if got, extra := m.flops(10, false), int64(10*8+10*(16+8+1)+10*(16+8)+4*10); got != prod+extra {
		t.Errorf("forward FLOPs %d, want %d", got, prod+extra)
	}
}

// Training on a planted GMF teacher (the label is the sign of u·v over
// the GMF factors) drives the loss down and is deterministic by seed.
func TestTrainsAndIsDeterministic(t *testing.T) {
	run := func() ([]float64, []byte) {
		m := configured(t, 2, 8, 0, `{"layers": [8, 4], "learning_rate": 0.5}`)
		b := newBatch(t, rand.New(rand.NewPCG(5, 6)), 64, 2, 8, 0)
		for i := range 64 {
			var dot float32
			for k := range 4 {
				dot += b.pooled[i*8+k] * b.pooled[(64+i)*8+k]
			}
			b.labels[i] = 0
			if dot > 0 {
				b.labels[i] = 1
			}
		}
		var losses []float64
		for range 200 {
			req := *b.req
			req.Train = true
			res, err := m.Step(context.Background(), &req)
			if err != nil {
				t.Fatal(err)
			}
			losses = append(losses, res.Loss)
		}
		d, _ := m.Digest(context.Background())
		return losses, d
	}
	l1, d1 := run()
	l2, d2 := run()
	if !(l1[len(l1)-1] < 0.5*l1[0]) {
		t.Errorf("loss %v → %v after 200 steps: want it halved", l1[0], l1[len(l1)-1])
	}
	if !slices.Equal(l1, l2) || !slices.Equal(d1, d2) {
		t.Error("two runs of one seed differ")
	}
}

func TestRejects(t *testing.T) {
	for _, tc := range []struct {
		tables, dim int
		opts, key   string
	}{
		{2, 8, `{}`, "layers"},
		{2, 8, `{"layers": [4, 0]}`, "layers"},
		{2, 8, `{"layers": [4], "gmf_dim": 8}`, "gmf_dim"},
		{2, 8, `{"layers": [4], "learning_rate": -1}`, "learning_rate"},
		{1, 8, `{"layers": [4]}`, "2 tables"},
	} {
		tabs := make([]plugin.Table, tc.tables)
		for i := range tabs {
			tabs[i] = plugin.Table{Rows: 10, Dim: tc.dim}
		}
		err := New().Configure(context.Background(), plugin.Setup{Tables: tabs, BatchSize: 4, Lookups: 1, Options: json.RawMessage(tc.opts)})
		if !errors.Is(err, plugin.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%d tables, %s: %v, want an invalid config about %s", tc.tables, tc.opts, err, tc.key)
		}
	}
}
