package logreg

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
	"github.com/flowrun/flowrun/sdk/region/regiontest"
)

const (
	batchSize = 8
	dense     = 2
)

var tables = []plugin.Table{{Rows: 100, Dim: 2}, {Rows: 100, Dim: 3}}

const width = 2 + 3 // pooled floats per sample

func configured(t testing.TB, seed uint64, opts string) model.Model {
	t.Helper()
	m := New()
	err := m.Configure(context.Background(), plugin.Setup{
		Seed: seed, Tables: tables, BatchSize: batchSize, DenseFeatures: dense, Options: json.RawMessage(opts),
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// inputs is one batch with a planted linear teacher, so labels carry signal.
type inputs struct{ pooled, dense, labels []float32 }

func newInputs(rng *rand.Rand) inputs {
	in := inputs{
		pooled: make([]float32, batchSize*width),
		dense:  make([]float32, batchSize*dense),
		labels: make([]float32, batchSize),
	}
	for i := range in.pooled {
		in.pooled[i] = rng.Float32()*2 - 1
	}
	for i := range in.dense {
		in.dense[i] = rng.Float32()*2 - 1
	}
	for i := range batchSize {
		// teacher: first table's first element plus the first dense feature
		if in.pooled[i*2]+in.dense[i*dense] > 0 {
			in.labels[i] = 1
		}
	}
	return in
}

type refs struct {
	req *model.StepRequest
	a   *regiontest.Arena
}

func (in inputs) request(a *regiontest.Arena, train bool) refs {
	req := &model.StepRequest{
		Batch:  batchSize,
		Pooled: a.Float32s(in.pooled),
		Dense:  a.Float32s(in.dense),
		Labels: a.Float32s(in.labels),
		Train:  train,
		Scores: a.Alloc(4 * batchSize),
	}
	if train {
		req.PooledGrad = a.Alloc(4 * batchSize * width)
	}
	return refs{req: req, a: a}
}

func runStep(t testing.TB, m model.Model, r refs) *model.StepResult {
	t.Helper()
	res, err := m.Step(context.Background(), r.req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestLossGoesDown(t *testing.T) {
	m := configured(t, 1, `{"learning_rate": 0.5}`)
	rng := rand.New(rand.NewPCG(1, 2))
	a := regiontest.New(t, 1<<20)
	eval := newInputs(rng)
	before := runStep(t, m, eval.request(a, false)).Loss
	for range 300 {
		runStep(t, m, newInputs(rng).request(a, true))
	}
	after := runStep(t, m, eval.request(a, false)).Loss
	if !(after < 0.6*before) {
		t.Fatalf("held-out loss %v → %v: the model did not learn", before, after)
	}
}

// TestPooledGradMatchesFiniteDifferences checks d(mean loss)/d(pooled)
// against central differences of the forward loss.
func TestPooledGradMatchesFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	in := newInputs(rng)
	a := regiontest.New(t, 1<<20)
	r := in.request(a, true)
	runStep(t, configured(t, 5, ``), r)
	grad := a.ReadFloat32s(r.req.PooledGrad)

	m := configured(t, 5, ``)
	const eps = 1e-2
	for k := range in.pooled {
		loss := func(delta float32) float64 {
			moved := in
			moved.pooled = append([]float32(nil), in.pooled...)
			moved.pooled[k] += delta
			return runStep(t, m, moved.request(a, false)).Loss
		}
		fd := (loss(eps) - loss(-eps)) / (2 * eps)
		if math.Abs(fd-float64(grad[k])) > 1e-3+1e-2*math.Abs(fd) {
			t.Errorf("pooled[%d]: gradient %v, finite difference %v", k, grad[k], fd)
		}
	}
}

func TestScoresAndEvalLeavesWeights(t *testing.T) {
	m := configured(t, 9, ``)
	before, _ := m.Digest(context.Background())
	a := regiontest.New(t, 1<<16)
	r := newInputs(rand.New(rand.NewPCG(1, 1))).request(a, false)
	res := runStep(t, m, r)
	after, _ := m.Digest(context.Background())
	if !bytes.Equal(before, after) {
		t.Fatal("a forward-only step changed the weights")
	}
	var loss float64
	labels := a.ReadFloat32s(r.req.Labels)
	for i, p := range a.ReadFloat32s(r.req.Scores) {
		if !(p > 0 && p < 1) {
			t.Fatalf("score %d = %v", i, p)
		}
		if labels[i] == 1 {
			loss -= math.Log(float64(p))
		} else {
			loss -= math.Log(1 - float64(p))
		}
	}
	if got := loss / batchSize; math.Abs(got-res.Loss) > 1e-5 {
		t.Fatalf("loss %v, from scores %v", res.Loss, got)
	}
	if res.FLOPs <= 0 {
		t.Fatalf("FLOPs = %d", res.FLOPs)
	}
	r.req.Scores = region.Ref{}
	runStep(t, m, r) // scores are optional
}

func TestDeterministicDigest(t *testing.T) {
	train := func(seed uint64) []byte {
		m := configured(t, seed, `{"l2": 0.01}`)
		rng := rand.New(rand.NewPCG(7, 7))
		a := regiontest.New(t, 1<<20)
		for range 20 {
			runStep(t, m, newInputs(rng).request(a, true))
		}
		d, err := m.Digest(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if a, b := train(1), train(1); !bytes.Equal(a, b) {
		t.Fatal("same seed and data, different digests")
	}
	if a, b := train(1), train(2); bytes.Equal(a, b) {
		t.Fatal("different seeds, same digest")
	}
}

func TestDigestIsCanonical(t *testing.T) {
	m := configured(t, 42, ``).(*logreg)
	w := initWeights(42, width+dense)
	var buf []byte
	for _, x := range append(w, 0) { // weights, then the zero bias
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
	}
	want := sha256.Sum256(buf)
	got, _ := m.Digest(context.Background())
	if !bytes.Equal(got, want[:]) {
		t.Fatal("digest is not sha256 over little-endian weights then bias")
	}
	for _, x := range w {
		if lim := float32(1 / math.Sqrt(width+dense)); x < -lim || x >= lim || x == 0 {
			t.Fatalf("initial weight %v outside [-%v, %v)", x, lim, lim)
		}
	}
}

func TestRejects(t *testing.T) {
	ctx := context.Background()
	a := regiontest.New(t, 1<<16)
	in := newInputs(rand.New(rand.NewPCG(1, 1)))
	if _, err := New().Step(ctx, in.request(a, true).req); !errors.Is(err, plugin.ErrNotConfigured) {
		t.Errorf("step before configure: %v", err)
	}
	if _, err := New().Digest(ctx); !errors.Is(err, plugin.ErrNotConfigured) {
		t.Errorf("digest before configure: %v", err)
	}
	for _, opts := range []string{`{"learning_rate":0}`, `{"learning_rate":-1}`, `{"l2":-0.1}`, `{"momentum":0.9}`} {
		err := New().Configure(ctx, plugin.Setup{Tables: tables, DenseFeatures: dense, Options: json.RawMessage(opts)})
		if !errors.Is(err, plugin.ErrInvalidConfig) {
			t.Errorf("options %s: %v", opts, err)
		}
	}
	if err := New().Configure(ctx, plugin.Setup{}); !errors.Is(err, plugin.ErrInvalidConfig) {
		t.Errorf("no inputs: %v", err)
	}

	m := configured(t, 1, ``)
	before, _ := m.Digest(ctx)
	bad := map[string]func(r *model.StepRequest){
		"zero batch":          func(r *model.StepRequest) { r.Batch = 0 },
		"batch beyond pooled": func(r *model.StepRequest) { r.Batch = batchSize + 1 },
		"pooled short":        func(r *model.StepRequest) { r.Pooled.Length -= 4 },
		"dense missing":       func(r *model.StepRequest) { r.Dense = region.Ref{} },
		"labels misaligned":   func(r *model.StepRequest) { r.Labels.Offset++ },
		"grad missing":        func(r *model.StepRequest) { r.PooledGrad = region.Ref{} },
		"scores short":        func(r *model.StepRequest) { r.Scores.Length = 4 },
		"label not 0 or 1": func(r *model.StepRequest) {
			region.Float32s(a.Bytes(r.Labels))[3] = 2
		},
		"label NaN": func(r *model.StepRequest) {
			region.Float32s(a.Bytes(r.Labels))[0] = float32(math.NaN())
		},
	}
	for name, f := range bad {
		r := in.request(a, true)
		f(r.req)
		if _, err := m.Step(ctx, r.req); !errors.Is(err, plugin.ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrInvalidRequest", name, err)
		}
	}
	if _, err := m.Step(ctx, nil); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Errorf("nil request: %v", err)
	}
	if after, _ := m.Digest(ctx); !bytes.Equal(before, after) {
		t.Error("a rejected step changed the weights")
	}
}
