package dlrm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
	"github.com/flowrun/flowrun/sdk/region/regiontest"
)

// shape is a run's shape: tables of one dim, dense features, batch size.
type shape struct{ tables, dim, dense, batch int }

func (sh shape) setup(seed uint64, opts string) plugin.Setup {
	tables := make([]plugin.Table, sh.tables)
	for i := range tables {
		tables[i] = plugin.Table{Rows: 1000, Dim: sh.dim}
	}
	return plugin.Setup{Seed: seed, Tables: tables, BatchSize: sh.batch, Lookups: 1, DenseFeatures: sh.dense, Options: json.RawMessage(opts)}
}

func configured(t testing.TB, sh shape, seed uint64, opts string) *dlrm {
	t.Helper()
	m := New().(*dlrm)
	if err := m.Configure(context.Background(), sh.setup(seed, opts)); err != nil {
		t.Fatal(err)
	}
	return m
}

// batch is one batch's inputs, with labels from a planted teacher.
type batch struct {
	sh                    shape
	pooled, dense, labels []float32
}

// teacher labels a sample by the sign of a function DLRM can represent
// with fixed embeddings: a linear function of the dense features, plus the
// projection of every table's embedding on one direction u ≥ 0 (a bottom
// output that ignores the dense features, through ReLU), each table with
// its own sign, plus the dot product of the first two tables' embeddings.
type teacher struct {
	u, signs, dense []float64
}

func newTeacher(sh shape, rng *rand.Rand) teacher {
	tc := teacher{u: make([]float64, sh.dim), signs: make([]float64, sh.tables), dense: make([]float64, sh.dense)}
	for i := range tc.u {
		tc.u[i] = math.Abs(rng.NormFloat64())
	}
	for i := range tc.signs {
		tc.signs[i] = float64(2*rng.IntN(2) - 1)
	}
	for i := range tc.dense {
		tc.dense[i] = rng.NormFloat64()
	}
	return tc
}

func (tc teacher) batch(sh shape, rng *rand.Rand) batch {
	b := batch{
		sh:     sh,
		pooled: make([]float32, sh.tables*sh.batch*sh.dim),
		dense:  make([]float32, sh.batch*sh.dense),
		labels: make([]float32, sh.batch),
	}
	for i := range b.pooled {
		b.pooled[i] = float32(rng.NormFloat64())
	}
	for i := range b.dense {
		b.dense[i] = float32(rng.NormFloat64())
	}
	for s := range sh.batch {
		e := func(t, d int) float64 { return float64(b.pooled[(t*sh.batch+s)*sh.dim+d]) }
		var z float64
		for t := range sh.tables {
			for d := range sh.dim {
				z += tc.signs[t] * tc.u[d] * e(t, d)
			}
		}
		for d := range sh.dense {
			z += tc.dense[d] * float64(b.dense[s*sh.dense+d])
		}
		if sh.tables > 1 {
			for d := range sh.dim {
				z += e(0, d) * e(1, d)
			}
		}
		if z > 0 {
			b.labels[s] = 1
		}
	}
	return b
}

func (b batch) request(a *regiontest.Arena, train bool) *model.StepRequest {
	req := &model.StepRequest{
		Batch:  b.sh.batch,
		Pooled: a.Float32s(b.pooled),
		Dense:  a.Float32s(b.dense),
		Labels: a.Float32s(b.labels),
		Train:  train,
		Scores: a.Alloc(4 * int64(b.sh.batch)),
	}
	if train {
		req.PooledGrad = a.Alloc(4 * int64(len(b.pooled)))
	}
	return req
}

func runStep(t testing.TB, m model.Model, req *model.StepRequest) *model.StepResult {
	t.Helper()
	res, err := m.Step(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func digest(t testing.TB, m model.Model) []byte {
	t.Helper()
	d, err := m.Digest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var tiny = shape{tables: 2, dim: 3, dense: 3, batch: 5}

const tinyOpts = `{"bottom_mlp": [5, 3], "top_mlp": [6, 4, 1]}`

// TestForwardMatchesReference recomputes the logits in float64 with
// straightforward loops, spelling out the architecture: ReLU after every
// bottom layer, the interaction [x, <e1,x>, <e2,x>, <e2,e1>], ReLU after
// every top layer but the last.
func TestForwardMatchesReference(t *testing.T) {
	m := configured(t, tiny, 3, tinyOpts)
	b := newTeacher(tiny, rand.New(rand.NewPCG(1, 2))).batch(tiny, rand.New(rand.NewPCG(3, 4)))
	a := regiontest.New(t, 1<<16)
	req := b.request(a, false)
	runStep(t, m, req)
	scores := a.ReadFloat32s(req.Scores)

	dense := func(l *layer, x []float64) []float64 {
		y := make([]float64, l.out)
		for o := range l.out {
			y[o] = float64(l.b[o])
			for i := range l.in {
				y[o] += float64(l.w[o*l.in+i]) * x[i]
			}
			if l.relu {
				y[o] = math.Max(y[o], 0)
			}
		}
		return y
	}
	d := tiny.dim
	for s := range tiny.batch {
		x := make([]float64, tiny.dense)
		for i := range x {
			x[i] = float64(b.dense[s*tiny.dense+i])
		}
		for _, l := range m.bottom {
			x = dense(l, x)
		}
		e := func(t int) []float64 {
			v := make([]float64, d)
			for k := range v {
				v[k] = float64(b.pooled[(t*tiny.batch+s)*d+k])
			}
			return v
		}
		dot := func(u, v []float64) (z float64) {
			for k := range u {
				z += u[k] * v[k]
			}
			return z
		}
		e1, e2 := e(0), e(1)
		r := append(slices.Clone(x), dot(e1, x), dot(e2, x), dot(e2, e1))
		for _, l := range m.top {
			r = dense(l, r)
		}
		want := 1 / (1 + math.Exp(-r[0]))
		if math.Abs(float64(scores[s])-want) > 1e-5 {
			t.Errorf("sample %d: score %v, float64 reference %v", s, scores[s], want)
		}
	}
}

// reluPattern is which ReLU outputs of the last forward pass are positive;
// a finite difference is only meaningful where it stays the same on both
// sides.
func (m *dlrm) reluPattern() []bool {
	var p []bool
	for _, acts := range [][][]float32{m.ws.bottom, m.ws.top[:len(m.ws.top)-1]} {
		for _, a := range acts {
			for _, v := range a {
				p = append(p, v > 0)
			}
		}
	}
	return p
}

// TestGradientMatchesFiniteDifferences checks every gradient the model
// computes, PooledGrad and every weight's and bias's, against central
// differences of the forward loss.
//
// Tolerance: the forward runs in float32, so the loss carries a relative
// rounding error of about n·2⁻²⁴ ≈ 1e-6 for the few dozen operations on
// each path; divided by the step 2h = 2e-3 that is ≈ 1e-3·|L| at worst in
// the difference quotient, while the truncation error, h²·|L”'|/6, is
// ≈ 1e-7. The difference is computed over the perturbation actually made
// in float32, and coordinates whose step crosses a ReLU kink (where the
// loss is not differentiable) are skipped.
func TestGradientMatchesFiniteDifferences(t *testing.T) {
	const h = 1e-3
	b := newTeacher(tiny, rand.New(rand.NewPCG(5, 6))).batch(tiny, rand.New(rand.NewPCG(7, 8)))
	a := regiontest.New(t, 1<<20)

	trained := configured(t, tiny, 9, tinyOpts)
	req := b.request(a, true)
	runStep(t, trained, req)
	pooledGrad := a.ReadFloat32s(req.PooledGrad)

	m := configured(t, tiny, 9, tinyOpts)
	evalReq := b.request(a, false)
	pooled := region.Float32s(a.Bytes(evalReq.Pooled))
	loss := func() float64 { return runStep(t, m, evalReq).Loss }
	loss()
	base := m.reluPattern()

	checked, skipped := 0, 0
	check := func(name string, x *float32, grad float32) {
		orig := *x
		*x = orig + h
		plus, up := loss(), *x
		kink := !slices.Equal(base, m.reluPattern())
		*x = orig - h
		minus, down := loss(), *x
		kink = kink || !slices.Equal(base, m.reluPattern())
		*x = orig
		if kink {
			skipped++
			return
		}
		checked++
		fd := (plus - minus) / float64(up-down)
		if math.Abs(fd-float64(grad)) > 1e-3+1e-2*math.Abs(fd) {
			t.Errorf("%s: gradient %v, finite difference %v", name, grad, fd)
		}
	}
	for k := range pooled {
		check("pooled["+strconv.Itoa(k)+"]", &pooled[k], pooledGrad[k])
	}
	// The trained model's gradients were taken at these same parameters:
	// they are what the update just applied.
	for li, l := range m.layers() {
		g := trained.layers()[li]
		for i := range l.w {
			check("layer "+strconv.Itoa(li)+" w["+strconv.Itoa(i)+"]", &l.w[i], g.gw[i])
		}
		for i := range l.b {
			check("layer "+strconv.Itoa(li)+" b["+strconv.Itoa(i)+"]", &l.b[i], g.gb[i])
		}
	}
	t.Logf("%d coordinates checked, %d skipped at ReLU kinks", checked, skipped)
	if skipped > checked/10 {
		t.Fatalf("%d coordinates checked, %d skipped at ReLU kinks: too few checked", checked, skipped)
	}
}

// TestUpdates checks the optimizers' arithmetic on one step: SGD subtracts
// lr·g; Adagrad's first step, from G = 0, subtracts lr·g/(|g|+ε).
func TestUpdates(t *testing.T) {
	b := newTeacher(tiny, rand.New(rand.NewPCG(1, 1))).batch(tiny, rand.New(rand.NewPCG(2, 2)))
	a := regiontest.New(t, 1<<20)
	for _, opt := range []string{"sgd", "adagrad"} {
		m := configured(t, tiny, 1, `{"bottom_mlp": [5, 3], "top_mlp": [6, 1], "optimizer": "`+opt+`", "learning_rate": 0.5, "epsilon": 0.001}`)
		var before [][]float32
		for _, l := range m.layers() {
			before = append(before, slices.Clone(l.w), slices.Clone(l.b))
		}
		runStep(t, m, b.request(a, true))
		for li, l := range m.layers() {
			for k, pair := range [][2][]float32{{l.w, l.gw}, {l.b, l.gb}} {
				w0 := before[2*li+k]
				for i, g := range pair[1] {
					want := w0[i] - float32(0.5*g)
					if opt == "adagrad" {
						want = w0[i] - float32(0.5*g)/(float32(math.Sqrt(float64(float32(g*g))))+0.001)
					}
					if pair[0][i] != want {
						t.Fatalf("%s: layer %d param %d: %v → %v, want %v (g = %v)", opt, li, i, w0[i], pair[0][i], want, g)
					}
				}
			}
		}
	}
}

// TestLearns trains on fresh batches from a planted teacher and checks the
// held-out loss falls and the held-out ranking is far better than chance.
func TestLearns(t *testing.T) {
	sh := shape{tables: 4, dim: 8, dense: 6, batch: 64}
	held := sh
	held.batch = 512
	for _, opts := range []string{
		`{"bottom_mlp": [32, 8], "top_mlp": [32, 16, 1], "learning_rate": 0.2}`,
		`{"bottom_mlp": [32, 8], "top_mlp": [32, 16, 1], "optimizer": "adagrad", "learning_rate": 0.02}`,
	} {
		m := configured(t, sh, 1, opts)
		tc := newTeacher(sh, rand.New(rand.NewPCG(1, 2)))
		rng := rand.New(rand.NewPCG(3, 4))
		a := regiontest.New(t, 1<<24)
		eval := tc.batch(held, rand.New(rand.NewPCG(9, 9)))
		evalReq := eval.request(a, false)
		before := runStep(t, m, evalReq).Loss
		for range 200 {
			runStep(t, m, tc.batch(sh, rng).request(a, true))
		}
		after := runStep(t, m, evalReq).Loss
		auc := aucOf(a.ReadFloat32s(evalReq.Scores), eval.labels)
		if !(after < 0.5*before) || auc < 0.95 {
			t.Errorf("%s: held-out loss %.4f → %.4f, AUC %.3f: the model did not learn", opts, before, after, auc)
		}
		t.Logf("%s: held-out loss %.4f → %.4f, AUC %.3f", opts, before, after, auc)
	}
}

// aucOf is the probability a random positive scores above a random
// negative (ties count half).
func aucOf(scores, labels []float32) float64 {
	var pairs, wins float64
	for i, yi := range labels {
		for j, yj := range labels {
			if yi == 1 && yj == 0 {
				pairs++
				switch {
				case scores[i] > scores[j]:
					wins++
				case scores[i] == scores[j]:
					wins += 0.5
				}
			}
		}
	}
	return wins / pairs
}

// TestPresets configures every preset on the run its paper describes and
// checks the layers' shapes: the dense features in, the bottom MLP's
// widths, the interaction's width (dim + T(T+1)/2) into the top MLP, and
// one logit out.
func TestPresets(t *testing.T) {
	want := map[string][2][]int{
		"scratchpipe": {{512, 256, 128}, {1024, 1024, 512, 256, 1}},
		"rm1":         {{256, 128, 64}, {256, 64, 1}},
		"rm2":         {{256, 128, 64}, {512, 128, 1}},
		"rm3":         {{2560, 512, 64}, {512, 128, 1}},
		"rm4":         {{2560, 1024, 64}, {2048, 2048, 1024, 1}},
		"rmsmall":     {{64, 4}, {64, 1}},
		"rmmed":       {{64, 16}, {64, 1}},
		"rmlarge":     {{512, 256, 128, 64, 32}, {96, 1}},
		"small":       {{64, 32, 16}, {128, 128, 64, 32, 1}},
	}
	if len(want) != len(Presets()) {
		t.Fatalf("%d presets, the test knows %d", len(Presets()), len(want))
	}
	for _, p := range Presets() {
		w, ok := want[p.Name]
		if !ok {
			t.Fatalf("preset %s is not in the test", p.Name)
		}
		if p.Dim != p.BottomMLP[len(p.BottomMLP)-1] || p.Source == "" {
			t.Errorf("%s: dim %d, bottom %v, source %q", p.Name, p.Dim, p.BottomMLP, p.Source)
		}
		dim := p.Dim
		if dim == 0 {
			dim = 16 // a preset that follows the run's dim, tried at 16
		}
		tables := p.Tables
		if tables == 0 {
			tables = 26 // Criteo's, RecPipe's data set
		}
		sh := shape{tables: tables, dim: dim, dense: 13, batch: 1}
		m := configured(t, sh, 1, `{"preset": "`+strings.ToUpper(p.Name)+`"}`)
		var bottom, top []int
		in := 13
		for _, l := range m.bottom {
			if l.in != in || !l.relu {
				t.Errorf("%s: bottom layer in %d relu %v, want in %d, ReLU", p.Name, l.in, l.relu, in)
			}
			bottom, in = append(bottom, l.out), l.out
		}
		in = dim + tables*(tables+1)/2
		for i, l := range m.top {
			if l.in != in || l.relu != (i < len(m.top)-1) {
				t.Errorf("%s: top layer %d: in %d relu %v, want in %d", p.Name, i, l.in, l.relu, in)
			}
			top, in = append(top, l.out), l.out
		}
		if !slices.Equal(bottom, w[0]) || !slices.Equal(top, w[1]) {
			t.Errorf("%s: bottom %v top %v, want %v %v", p.Name, bottom, top, w[0], w[1])
		}
	}
	// ScratchPipe's run: 8 tables of dim 128 give the top MLP 128 + 36 inputs.
	m := configured(t, shape{tables: 8, dim: 128, dense: 13, batch: 1}, 1, ``)
	if m.top[0].in != 164 {
		t.Errorf("default preset's top MLP input is %d, want 164", m.top[0].in)
	}
	// An explicit half replaces the preset's.
	m = configured(t, shape{tables: 8, dim: 16, dense: 13, batch: 1}, 1, `{"preset": "rm1", "bottom_mlp": [16]}`)
	if len(m.bottom) != 1 || m.top[0].out != 256 {
		t.Errorf("rm1 with bottom_mlp [16]: bottom %d layers, top starts at %d", len(m.bottom), m.top[0].out)
	}
	// Both halves given: no preset needed.
	m = configured(t, shape{tables: 2, dim: 4, dense: 3, batch: 1}, 1, `{"preset": "", "bottom_mlp": [4], "top_mlp": [1]}`)
	if len(m.bottom) != 1 || len(m.top) != 1 || m.top[0].in != 4+3 {
		t.Errorf("explicit MLPs without a preset: %d bottom layers, %d top layers", len(m.bottom), len(m.top))
	}
}

func TestDimMismatchNamesBothFigures(t *testing.T) {
	ctx := context.Background()
	sh := shape{tables: 8, dim: 16, dense: 13, batch: 4}
	for opts, figures := range map[string][]string{
		``:                          {"scratchpipe", "128", "16"},
		`{"preset": "rm3"}`:         {"rm3", "64", "16"},
		`{"bottom_mlp": [64, 32]}`:  {"bottom_mlp", "32", "16"},
		`{"preset": "rmsmall"}`:     {"rmsmall", "4", "16"},
		`{"bottom_mlp": [8, 4, 2]}`: {"2", "16"},
	} {
		err := New().Configure(ctx, sh.setup(1, opts))
		if !errors.Is(err, plugin.ErrInvalidConfig) {
			t.Fatalf("%s: %v, want ErrInvalidConfig", opts, err)
		}
		for _, f := range figures {
			if !strings.Contains(err.Error(), f) {
				t.Errorf("%s: %q does not name %s", opts, err, f)
			}
		}
	}
}

func TestRejects(t *testing.T) {
	ctx := context.Background()
	for _, opts := range []string{
		`{"preset": "rm9"}`, `{"bottom_mlp": []}`, `{"bottom_mlp": [0, 3]}`, `{"top_mlp": [4, 2]}`,
		`{"top_mlp": [-1, 1]}`, `{"interaction": "cat"}`, `{"optimizer": "adam"}`, `{"learning_rate": 0}`,
		`{"learning_rate": -0.1}`, `{"epsilon": 0}`, `{"momentum": 0.9}`, `{"bottom_mlp": "64-3"}`,
		`{"bottom_mlp": [5.5, 3]}`, `{"preset": ""}`, `{"preset": "", "bottom_mlp": [5, 3]}`,
		`{"threads": -1}`,
	} {
		err := New().Configure(ctx, tiny.setup(1, opts))
		if !errors.Is(err, plugin.ErrInvalidConfig) {
			t.Errorf("options %s: %v, want ErrInvalidConfig", opts, err)
		}
	}
	for name, mutate := range map[string]func(*plugin.Setup){
		"no dense features": func(s *plugin.Setup) { s.DenseFeatures = 0 },
		"no tables":         func(s *plugin.Setup) { s.Tables = nil },
		"mixed dims":        func(s *plugin.Setup) { s.Tables[1].Dim = 4 },
	} {
		setup := tiny.setup(1, tinyOpts)
		mutate(&setup)
		if err := New().Configure(ctx, setup); !errors.Is(err, plugin.ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", name, err)
		}
	}
	// Every problem at once.
	err := New().Configure(ctx, tiny.setup(1, `{"optimizer": "adam", "learning_rate": -1}`))
	if err == nil || !strings.Contains(err.Error(), "optimizer") || !strings.Contains(err.Error(), "learning_rate") {
		t.Errorf("two bad options: %v", err)
	}

	a := regiontest.New(t, 1<<20)
	b := newTeacher(tiny, rand.New(rand.NewPCG(1, 1))).batch(tiny, rand.New(rand.NewPCG(1, 1)))
	if _, err := New().Step(ctx, b.request(a, true)); !errors.Is(err, plugin.ErrNotConfigured) {
		t.Errorf("step before configure: %v", err)
	}
	if _, err := New().Digest(ctx); !errors.Is(err, plugin.ErrNotConfigured) {
		t.Errorf("digest before configure: %v", err)
	}
	m := configured(t, tiny, 1, tinyOpts)
	before := digest(t, m)
	for name, mutate := range map[string]func(*model.StepRequest){
		"zero batch":          func(r *model.StepRequest) { r.Batch = 0 },
		"batch beyond pooled": func(r *model.StepRequest) { r.Batch = tiny.batch + 1 },
		"pooled short":        func(r *model.StepRequest) { r.Pooled.Length -= 4 },
		"dense missing":       func(r *model.StepRequest) { r.Dense = region.Ref{} },
		"labels misaligned":   func(r *model.StepRequest) { r.Labels.Offset++ },
		"grad missing":        func(r *model.StepRequest) { r.PooledGrad = region.Ref{} },
		"scores short":        func(r *model.StepRequest) { r.Scores.Length = 4 },
		"label 2":             func(r *model.StepRequest) { region.Float32s(a.Bytes(r.Labels))[3] = 2 },
		"label NaN":           func(r *model.StepRequest) { region.Float32s(a.Bytes(r.Labels))[0] = float32(math.NaN()) },
	} {
		req := b.request(a, true)
		mutate(req)
		if _, err := m.Step(ctx, req); !errors.Is(err, plugin.ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrInvalidRequest", name, err)
		}
	}
	if _, err := m.Step(ctx, nil); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Errorf("nil request: %v", err)
	}
	if !bytes.Equal(before, digest(t, m)) {
		t.Error("a rejected step changed the parameters")
	}
}

// TestDigestIsCanonical recomputes the digest from the layers: W then b,
// bottom then top, then (Adagrad) the state in the same order.
func TestDigestIsCanonical(t *testing.T) {
	for _, opt := range []string{"sgd", "adagrad"} {
		m := configured(t, tiny, 42, `{"bottom_mlp": [5, 3], "top_mlp": [6, 1], "optimizer": "`+opt+`"}`)
		a := regiontest.New(t, 1<<20)
		runStep(t, m, newTeacher(tiny, rand.New(rand.NewPCG(1, 1))).batch(tiny, rand.New(rand.NewPCG(2, 2))).request(a, true))
		var buf []byte
		put := func(xs []float32) {
			for _, x := range xs {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
			}
		}
		for _, l := range append(append([]*layer{}, m.bottom...), m.top...) {
			put(l.w)
			put(l.b)
		}
		if opt == "adagrad" {
			for _, l := range append(append([]*layer{}, m.bottom...), m.top...) {
				put(l.accW)
				put(l.accB)
			}
		}
		want := sha256.Sum256(buf)
		if got := digest(t, m); !bytes.Equal(got, want[:]) {
			t.Errorf("%s: digest is not sha256 over the canonical little-endian parameters (and state)", opt)
		}
	}
}

// TestInit checks the initial parameters lie within the Xavier-uniform
// (weights) and √(3/out) (biases) limits and have about the variances of
// DLRM's reference, 2/(in+out) and 1/out.
func TestInit(t *testing.T) {
	m := configured(t, shape{tables: 2, dim: 64, dense: 200, batch: 1}, 7, `{"bottom_mlp": [300, 64], "top_mlp": [1]}`)
	for _, l := range m.layers() {
		for _, c := range []struct {
			xs        []float32
			limit, v2 float64
		}{
			{l.w, math.Sqrt(6 / float64(l.in+l.out)), 2 / float64(l.in+l.out)},
			{l.b, math.Sqrt(3 / float64(l.out)), 1 / float64(l.out)},
		} {
			var ss float64
			for _, x := range c.xs {
				if math.Abs(float64(x)) > c.limit {
					t.Fatalf("layer %dx%d: %v beyond ±%v", l.out, l.in, x, c.limit)
				}
				ss += float64(x) * float64(x)
			}
			if n := len(c.xs); n > 1000 {
				if v := ss / float64(n); math.Abs(v-c.v2) > 0.1*c.v2 {
					t.Errorf("layer %dx%d: variance %v, want ≈ %v", l.out, l.in, v, c.v2)
				}
			}
		}
	}
}

// TestDeterministicAcrossThreads trains with shapes large enough for
// sdk/model/gemm to split the products across goroutines, on GOMAXPROCS 1,
// 2 and 4: the digests must be identical.
func TestDeterministicAcrossThreads(t *testing.T) {
	sh := shape{tables: 4, dim: 64, dense: 96, batch: 256}
	opts := `{"bottom_mlp": [192, 64], "top_mlp": [160, 1], "optimizer": "adagrad", "learning_rate": 0.01}`
	tc := newTeacher(sh, rand.New(rand.NewPCG(1, 2)))
	// Split the interaction across goroutines at this small batch too.
	defer func(f int64) { parallelFLOPs = f }(parallelFLOPs)
	parallelFLOPs = 0
	train := func(procs int, seed uint64, extra ...string) []byte {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		o := opts
		for _, e := range extra {
			o = strings.TrimSuffix(o, "}") + ", " + e + "}"
		}
		m := configured(t, sh, seed, o)
		rng := rand.New(rand.NewPCG(3, 4))
		for range 3 {
			runStep(t, m, tc.batch(sh, rng).request(regiontest.New(t, 1<<21), true))
		}
		return digest(t, m)
	}
	one := train(1, 5)
	for _, procs := range []int{2, 4} {
		if many := train(procs, 5); !bytes.Equal(one, many) {
			t.Fatalf("GOMAXPROCS 1 and %d give different digests", procs)
		}
	}
	// The threads option caps the goroutines; it must not change the bits.
	for _, threads := range []string{`"threads": 1`, `"threads": 3`} {
		if capped := train(4, 5, threads); !bytes.Equal(one, capped) {
			t.Fatalf("GOMAXPROCS 4 with %s gives a different digest", threads)
		}
	}
	if other := train(1, 6); bytes.Equal(one, other) {
		t.Fatal("different seeds give the same digest")
	}
}

// TestFLOPs counts a tiny model by hand: tables 2, dim 3 (3 pairs,
// interaction width 6), dense 3, bottom 3→5→3, top 6→6→4→1, batch 5.
func TestFLOPs(t *testing.T) {
	m := configured(t, tiny, 1, tinyOpts)
	const B = 5
	// Layers (in·out): 15, 15 | 36, 24, 4; outputs: 5, 3 | 6, 4, 1.
	fwd := 2*B*(15+15+36+24+4) + B*(5+3+6+4+1) + B*(5+3+6+4) // products, biases, ReLUs
	fwd += B*3*2*3 + 4*B                                     // dots, sigmoid
	if got := m.flops(B, false); got != int64(fwd) {
		t.Errorf("forward FLOPs %d, want %d", got, fwd)
	}
	bwd := 2 * B                                  // loss gradient
	bwd += 2*B*(15+15+36+24+4) + 2*B*(15+36+24+4) // gw everywhere; dx but into the dense features
	bwd += B*(5+3+6+4+1) + B*(5+3+6+4)            // gb, ReLU masks
	bwd += B * 3 * 4 * 3                          // interaction
	params := (15 + 5) + (15 + 3) + (36 + 6) + (24 + 4) + (4 + 1)
	if got := m.flops(B, true); got != int64(fwd+bwd+2*params) {
		t.Errorf("training FLOPs %d, want %d", got, fwd+bwd+2*params)
	}
}

// TestShapes lists the tiny model's products by hand, in forward order:
// bottom 3→5→3, top 6→6→4→1, each over the batch's B samples; their
// products are the forward FLOPs' matrix part (the interaction is none).
func TestShapes(t *testing.T) {
	m := configured(t, tiny, 1, tinyOpts)
	const B = 5
	want := []device.Layer{{M: B, K: 3, N: 5}, {M: B, K: 5, N: 3}, {M: B, K: 6, N: 6}, {M: B, K: 6, N: 4}, {M: B, K: 4, N: 1}}
	got := m.shapes(B)
	if !slices.Equal(got, want) {
		t.Fatalf("layers %v, want %v", got, want)
	}
	var f int64
	for _, l := range got {
		f += l.FLOPs()
	}
	if f != 2*B*(15+15+36+24+4) {
		t.Errorf("layers' FLOPs %d, want the forward products' %d", f, 2*B*(15+15+36+24+4))
	}
}

// TestPooledGradMayAliasPooled passes the same region as Pooled and
// PooledGrad: the gradient must be the one computed from separate regions.
func TestPooledGradMayAliasPooled(t *testing.T) {
	b := newTeacher(tiny, rand.New(rand.NewPCG(1, 1))).batch(tiny, rand.New(rand.NewPCG(2, 2)))
	a := regiontest.New(t, 1<<20)
	req := b.request(a, true)
	runStep(t, configured(t, tiny, 1, tinyOpts), req)
	want := a.ReadFloat32s(req.PooledGrad)

	req = b.request(a, true)
	req.PooledGrad = req.Pooled
	runStep(t, configured(t, tiny, 1, tinyOpts), req)
	if got := a.ReadFloat32s(req.Pooled); !slices.Equal(got, want) {
		t.Fatalf("aliased PooledGrad %v, want %v", got, want)
	}
}

// TestBatchSizes runs a smaller batch after a larger one (the workspace is
// reused) and checks it matches a fresh model's result on that batch.
func TestBatchSizes(t *testing.T) {
	b := newTeacher(tiny, rand.New(rand.NewPCG(1, 1))).batch(tiny, rand.New(rand.NewPCG(2, 2)))
	small := tiny
	small.batch = 3
	sb := batch{sh: small, dense: b.dense[:3*tiny.dense], labels: b.labels[:3]}
	for t := range tiny.tables {
		sb.pooled = append(sb.pooled, b.pooled[t*tiny.batch*tiny.dim:(t*tiny.batch+3)*tiny.dim]...)
	}
	a := regiontest.New(t, 1<<20)
	m := configured(t, tiny, 1, tinyOpts)
	runStep(t, m, b.request(a, false))
	got := runStep(t, m, sb.request(a, true))
	fresh := configured(t, tiny, 1, tinyOpts)
	want := runStep(t, fresh, sb.request(a, true))
	if got.Loss != want.Loss || got.FLOPs != want.FLOPs || !bytes.Equal(digest(t, m), digest(t, fresh)) {
		t.Fatalf("batch 3 after batch 5: %+v, fresh: %+v (or the digests differ)", got, want)
	}
}

// dot is the interaction's dot product spelled out: the sum in index
// order, each product rounded to float32 (no FMA).
func dot(a, b []float32) float32 {
	var acc float32
	for k, v := range a {
		acc += float32(v * b[k])
	}
	return acc
}

// The blocked forward (4 vectors i by 8 vectors j at a time) gives every
// pair the scalar dot's bits, for table counts below, at and past a block.
func TestInteractionForwardMatchesScalarDots(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	defer func(f int64) { parallelFLOPs = f }(parallelFLOPs)
	for _, T := range []int{1, 2, 3, 7, 8, 9, 12, 17} {
		for _, d := range []int{1, 3, 16} {
			const B = 70
			it := dotInteraction{tables: T, dim: d, threads: 2}
			x, pooled := make([]float32, B*d), make([]float32, T*B*d)
			for i := range x {
				x[i] = rng.Float32()*2 - 1
			}
			for i := range pooled {
				pooled[i] = rng.Float32()*2 - 1
			}
			for _, flops := range []int64{1 << 62, 0} { // one goroutine, then two
				parallelFLOPs = flops
				r := make([]float32, B*it.width())
				it.forward(B, x, pooled, r, make([]float32, it.scratchFloats()))
				for s := range B {
					row := r[s*it.width() : (s+1)*it.width()]
					k := d
					for i := 1; i <= T; i++ {
						for j := range i {
							want := dot(it.vec(B, s, i, x, pooled), it.vec(B, s, j, x, pooled))
							if math.Float32bits(row[k]) != math.Float32bits(want) {
								t.Fatalf("T %d d %d sample %d pair (%d, %d): %g, want %g", T, d, s, i, j, row[k], want)
							}
							k++
						}
					}
				}
			}
		}
	}
}

// On one thread a training step allocates only what it returns: the
// StepResult and the request's view (sdk/model). Activations, gradients,
// packed panels and the interaction's scratch are kept between steps.
func TestStepAllocatesOnlyItsResult(t *testing.T) {
	for _, name := range []string{"small", "scratchpipe"} {
		sh := shape{tables: 8, dim: 16, dense: 13, batch: 512}
		if name == "scratchpipe" {
			sh.dim = 128
		}
		m := configured(t, sh, 1, `{"preset": "`+name+`", "threads": 1}`)
		req := newTeacher(sh, rand.New(rand.NewPCG(1, 2))).batch(sh, rand.New(rand.NewPCG(3, 4))).request(regiontest.New(t, 1<<27), true)
		runStep(t, m, req) // the workspace is made on the first step
		if n := testing.AllocsPerRun(3, func() { runStep(t, m, req) }); n > 2 {
			t.Errorf("%s: %v allocations per step, want at most 2", name, n)
		}
	}
}
