// Package dlrm is DLRM, the dense half of the recommendation model every
// paper flowrun reproduces trains: a bottom MLP over the dense features, a
// dot interaction between its output and each table's pooled embedding, a
// top MLP to one logit, a sigmoid and binary cross-entropy. It owns the
// dense parameters and their optimizer state (SGD or Adagrad); embedding
// rows are the kernel's, and Step hands back their gradient (PooledGrad).
//
// Presets give the MLP shapes of the papers' models (ScratchPipe's MLPerf
// DLRM, Tensor Casting's RM1–RM4, RecPipe's RMsmall/RMmed/RMlarge); see
// presets.go and the README.
//
// Results are deterministic: parameters start from a counter-based stream
// of Setup.Seed, every sum runs in a fixed order (the matrix products are
// sdk/model/gemm's chains of fused multiply-adds, see layer), and products
// outside them are rounded explicitly so they cannot fuse into FMAs. The
// same seed and batches give the same Digest however many threads run the
// products, on any machine.
//
// It imports only sdk/ (no internal/ package).
package dlrm

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"sync"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/model/gemm"
	"github.com/flowrun/flowrun/sdk/model/modelmath"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Name is the model's plugin name (builtin:dlrm).
const Name = "dlrm"

// Version is this plugin's version.
const Version = "0.1.0"

type dlrm struct {
	mu sync.Mutex
	// Batches holds the run's Setup once Configure succeeds, and maps
	// the step requests' regions.
	model.Batches
	cfg    Config
	shape  Preset
	dense  int // dense features per sample: the bottom MLP's input
	bottom []*layer
	inter  dotInteraction
	top    []*layer
	all    []*layer // bottom then top, made once (layers)
	// shapesOf is the last step's Layers (shapes), kept for the next
	// step of the same batch size.
	shapesOf []device.Layer
	ws       workspace
}

// New returns the DLRM model.
func New() model.Model { return &dlrm{} }

func (m *dlrm) Info(context.Context) (plugin.Info, error) {
	return model.NewInfo(Name, Version,
		"DLRM: bottom MLP, dot interaction with the pooled embeddings, top MLP, sigmoid + BCE; SGD or Adagrad; the papers' presets; matrix products on sdk/model/gemm's "+gemm.Kernel()+" kernel",
		fields()), nil
}

// slowKernelOnce says, once per process, that the matrix products run on
// the pure-Go kernel.
var slowKernelOnce sync.Once

func (m *dlrm) Configure(_ context.Context, setup plugin.Setup) error {
	cfg, err := model.DecodeConfig(setup, defaultConfig())
	if err != nil {
		return err
	}
	if gemm.Kernel() != "avx2-fma" {
		slowKernelOnce.Do(func() {
			fmt.Fprintf(os.Stderr, "dlrm: this CPU has no AVX2 and FMA (or the build is -tags purego): the matrix products run on the pure-Go %s kernel, with the same bits, several times slower\n", gemm.Kernel())
		})
	}
	shape := cfg.shape()
	if setup.DenseFeatures < 1 {
		return fmt.Errorf("%w: dense_features is %d: DLRM's bottom MLP needs at least one dense feature", plugin.ErrInvalidConfig, setup.DenseFeatures)
	}
	if len(setup.Tables) < 1 {
		return fmt.Errorf("%w: the run has no embedding tables: DLRM's interaction needs at least one", plugin.ErrInvalidConfig)
	}
	dim := setup.Tables[0].Dim
	for t, tab := range setup.Tables {
		if tab.Dim < 1 {
			return fmt.Errorf("%w: table %d: dim must be ≥ 1, got %d", plugin.ErrInvalidConfig, t, tab.Dim)
		}
		if tab.Dim != dim {
			return fmt.Errorf("%w: table %d has dim %d but table 0 has dim %d: the dot interaction needs one embedding dim", plugin.ErrInvalidConfig, t, tab.Dim, dim)
		}
	}
	// A preset whose bottom MLP ends at 0 follows the run's embedding dim
	// (flowrun's own "small"): the papers' presets keep their fixed dims.
	if last := len(shape.BottomMLP) - 1; shape.BottomMLP[last] == 0 && cfg.BottomMLP == nil {
		shape.BottomMLP[last] = dim
	}
	if out := shape.BottomMLP[len(shape.BottomMLP)-1]; out != dim {
		if cfg.BottomMLP == nil {
			return fmt.Errorf("%w: preset %s: its bottom MLP ends at width %d (the embedding dim of the paper's model) but the tables have dim %d; the dot interaction needs them equal: set the dataset's dim to %d (dataset.dim), or give bottom_mlp ending in %d",
				plugin.ErrInvalidConfig, shape.Name, out, dim, out, dim)
		}
		return fmt.Errorf("%w: bottom_mlp ends at width %d but the tables have dim %d; the dot interaction needs them equal", plugin.ErrInvalidConfig, out, dim)
	}

	adagrad := cfg.Optimizer == "adagrad"
	var bottom, top []*layer
	in := setup.DenseFeatures
	for _, out := range shape.BottomMLP {
		bottom = append(bottom, newLayer(in, out, true, adagrad, cfg.Threads))
		in = out
	}
	inter := dotInteraction{tables: len(setup.Tables), dim: dim, threads: cfg.Threads}
	in = inter.width()
	for i, out := range shape.TopMLP {
		top = append(top, newLayer(in, out, i < len(shape.TopMLP)-1, adagrad, cfg.Threads))
		in = out
	}
	initParams(setup.Seed, append(append([]*layer(nil), bottom...), top...))

	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg, m.shape = cfg, shape
	m.dense = setup.DenseFeatures
	m.bottom, m.inter, m.top = bottom, inter, top
	m.all = append(append([]*layer(nil), bottom...), top...)
	m.shapesOf = nil
	m.ws = workspace{}
	m.Configured(setup)
	return nil
}

// layers lists every layer in canonical order: bottom first to last, then
// top first to last; a step allocates nothing for it.
func (m *dlrm) layers() []*layer { return m.all }

// seedDomain keeps this model's stream apart from other plugins' streams
// of the same seed (a kernel initialising rows from it, say).
const seedDomain = 0x646c726d // "dlrm"

// initParams draws every weight and bias in canonical order (layer, W
// row-major, then b) from modelmath.Uniform's stream. DLRM's reference
// draws W from N(0, 2/(in+out)) and b from N(0, 1/out); these are the
// uniform distributions with the same variances: W ~ U(±√(6/(in+out)))
// (Xavier/Glorot uniform), b ~ U(±√(3/out)).
func initParams(seed uint64, layers []*layer) {
	seed ^= seedDomain
	var i uint64
	draw := func(xs []float32, limit float64) {
		for k := range xs {
			u := modelmath.Uniform(seed, i)
			xs[k] = float32((2*u - 1) * limit)
			i++
		}
	}
	for _, l := range layers {
		draw(l.w, math.Sqrt(6/float64(l.in+l.out)))
		draw(l.b, math.Sqrt(3/float64(l.out)))
	}
}

// workspace holds the activations and gradients of batches up to a size,
// kept between steps so that a run allocates them once.
type workspace struct {
	batch int
	// bottom[l] and top[l] are layer l's outputs [B][out]; r is the
	// interaction's output [B][width].
	bottom, top [][]float32
	r           []float32
	// ga and gb take turns holding the gradient flowing down the MLPs.
	ga, gb  []float32
	scratch []float32 // the interaction's per-goroutine vectors and gradients
}

func (m *dlrm) workspace(B int) *workspace {
	// A workspace made for a larger batch serves a smaller one: every
	// access is bounded by the step's batch size.
	if m.ws.batch >= B {
		return &m.ws
	}
	ws := workspace{batch: B}
	widest := max(m.dense, m.inter.width())
	for _, l := range m.bottom {
		ws.bottom = append(ws.bottom, make([]float32, B*l.out))
		widest = max(widest, l.out)
	}
	for _, l := range m.top {
		ws.top = append(ws.top, make([]float32, B*l.out))
		widest = max(widest, l.out)
	}
	ws.r = make([]float32, B*m.inter.width())
	ws.ga, ws.gb = make([]float32, B*widest), make([]float32, B*widest)
	ws.scratch = make([]float32, m.inter.scratchFloats())
	m.ws = ws
	return &m.ws
}

// step is one batch, mapped and checked (model.StepRequest.View).
type step = model.Step

// Step runs one batch forward and, when training, backward and one update
// of every dense parameter. Loss is the batch's mean BCE before the update.
func (m *dlrm) Step(ctx context.Context, req *model.StepRequest) (*model.StepResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.Open(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("dlrm step: %w", err)
	}
	ws := m.workspace(s.Batch)
	logits := m.forward(s, ws)
	loss := modelmath.Loss(logits, s.Labels, s.Scores, ws.ga)
	res := &model.StepResult{Loss: loss, FLOPs: m.flops(s.Batch, req.Train), Layers: m.shapes(s.Batch)}
	if req.Train {
		m.backward(s, ws)
		lr, eps := float32(m.cfg.LearningRate), float32(m.cfg.Epsilon)
		for _, l := range m.layers() {
			l.update(lr, eps)
		}
	}
	return res, nil
}

// forward runs the bottom MLP, the interaction and the top MLP, and
// returns the logits [B] (the top MLP's last output).
func (m *dlrm) forward(s *step, ws *workspace) []float32 {
	B := s.Batch
	x := s.Dense
	for i, l := range m.bottom {
		l.forward(B, x, ws.bottom[i])
		x = ws.bottom[i]
	}
	m.inter.forward(B, x, s.Pooled, ws.r, ws.scratch)
	h := ws.r
	for i, l := range m.top {
		l.forward(B, h, ws.top[i])
		h = ws.top[i]
	}
	return h[:B]
}

// backward runs the gradient from dz (in ws.ga) down the top MLP, through
// the interaction (writing PooledGrad) and down the bottom MLP, leaving
// every layer's gw and gb set. The dense features need no gradient, so the
// first bottom layer computes none.
func (m *dlrm) backward(s *step, ws *workspace) {
	B := s.Batch
	g, spare := ws.ga, ws.gb
	for i := len(m.top) - 1; i >= 0; i-- {
		in := ws.r
		if i > 0 {
			in = ws.top[i-1]
		}
		m.top[i].backward(B, in, ws.top[i], g, spare)
		g, spare = spare, g
	}
	last := len(m.bottom) - 1
	m.inter.backward(B, ws.bottom[last], s.Pooled, g, spare, s.PooledGrad, ws.scratch)
	g, spare = spare, g
	for i := last; i >= 0; i-- {
		in, dx := s.Dense, []float32(nil)
		if i > 0 {
			in, dx = ws.bottom[i-1], spare
		}
		m.bottom[i].backward(B, in, ws.bottom[i], g, dx)
		g, spare = spare, g
	}
}

// shapes is the forward pass's matrix products for B samples, bottom MLP
// then top MLP (the interaction's dots have no weights of the model's, so
// they are no layer): model.StepResult.Layers, for a device that prices a
// systolic array's tiling. The slice is kept for the next step of the
// same batch size (callers only read it), so a step allocates none.
func (m *dlrm) shapes(B int) []device.Layer {
	if len(m.shapesOf) > 0 && m.shapesOf[0].M == int64(B) {
		return m.shapesOf
	}
	out := make([]device.Layer, 0, len(m.bottom)+len(m.top))
	for _, l := range m.layers() {
		out = append(out, device.Layer{M: int64(B), K: int64(l.in), N: int64(l.out)})
	}
	m.shapesOf = out
	return out
}

// flops counts the step's floating-point operations: every multiply and
// add as one, a sigmoid as four, the loss gradient as two per sample.
// The float64 loss reported for monitoring is not counted.
func (m *dlrm) flops(B int, train bool) int64 {
	var f int64
	for _, l := range m.layers() {
		f += l.forwardFLOPs(B)
	}
	f += m.inter.forwardFLOPs(B) + 4*int64(B)
	if !train {
		return f
	}
	f += 2 * int64(B)
	for i, l := range m.bottom {
		f += l.backwardFLOPs(B, i > 0)
	}
	for _, l := range m.top {
		f += l.backwardFLOPs(B, true)
	}
	f += m.inter.backwardFLOPs(B)
	perParam := int64(sgdFLOPs)
	if m.cfg.Optimizer == "adagrad" {
		perParam = adagradFLOPs
	}
	for _, l := range m.layers() {
		f += perParam * l.params()
	}
	return f
}

// Digest is a sha256 over every layer's W (row-major [out][in]) then b, in
// canonical layer order (bottom first to last, then top first to last),
// followed, for Adagrad, by the state G in the same order; each value a
// little-endian IEEE-754 float32.
func (m *dlrm) Digest(context.Context) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.IsConfigured() {
		return nil, plugin.ErrNotConfigured
	}
	h := sha256.New()
	layers := m.layers()
	for _, l := range layers {
		binary.Write(h, binary.LittleEndian, l.w) // a hash's Write never fails
		binary.Write(h, binary.LittleEndian, l.b)
	}
	if m.cfg.Optimizer == "adagrad" {
		for _, l := range layers {
			binary.Write(h, binary.LittleEndian, l.accW)
			binary.Write(h, binary.LittleEndian, l.accB)
		}
	}
	return h.Sum(nil), nil
}
