// Package logreg is a logistic-regression dense model: the smallest model
// that really trains end to end through flowrun's pipeline. Its input is the
// concatenation of every table's pooled embedding and the dense features;
// its output is sigmoid(w·x + b), trained with binary cross-entropy and SGD.
// It returns the gradient of the mean batch loss with respect to the pooled
// embeddings, so the embedding rows train too.
//
// Arithmetic is float32 in a fixed order (features in table order then dense
// order, samples in batch order), and every product that is added is
// converted explicitly so Go cannot fuse it into an FMA: the digest must not
// depend on the machine or on which pipeline ran the model.
//
// It imports only sdk/ (no internal/ package).
package logreg

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/model/modelmath"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Name is the model's plugin name (builtin:logreg).
const Name = "logreg"

// Version is this plugin's version.
const Version = "0.1.0"

type logreg struct {
	mu sync.Mutex
	// Batches holds the run's Setup once Configure succeeds, and maps
	// the step requests' regions.
	model.Batches
	cfg   Config
	dims  []int // embedding dim of each table
	dense int   // dense features per sample
	// weights has one entry per input feature: the tables' pooled
	// embeddings, table after table, then the dense features.
	weights []float32
	bias    float32
}

// New returns the logistic-regression model.
func New() model.Model { return &logreg{} }

func (m *logreg) Info(context.Context) (plugin.Info, error) {
	return model.NewInfo(Name, Version,
		"logistic regression on the pooled embeddings and dense features, BCE loss, SGD",
		fields()), nil
}

func (m *logreg) Configure(_ context.Context, setup plugin.Setup) error {
	cfg, err := model.DecodeConfig(setup, defaultConfig())
	if err != nil {
		return err
	}
	if setup.DenseFeatures < 0 {
		return fmt.Errorf("%w: dense_features must be ≥ 0, got %d", plugin.ErrInvalidConfig, setup.DenseFeatures)
	}
	dims := make([]int, len(setup.Tables))
	features := setup.DenseFeatures
	for t, tab := range setup.Tables {
		if tab.Dim < 1 {
			return fmt.Errorf("%w: table %d: dim must be ≥ 1, got %d", plugin.ErrInvalidConfig, t, tab.Dim)
		}
		dims[t] = tab.Dim
		features += tab.Dim
	}
	if features < 1 {
		return fmt.Errorf("%w: the model has no input: no tables and no dense features", plugin.ErrInvalidConfig)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg = cfg
	m.dims = dims
	m.dense = setup.DenseFeatures
	m.weights = initWeights(setup.Seed, features)
	m.bias = 0
	m.Configured(setup)
	return nil
}

// initWeights draws each weight uniformly from [-1/√n, 1/√n), the usual
// initialisation of a linear layer with n inputs, from modelmath.Uniform's
// stream.
func initWeights(seed uint64, n int) []float32 {
	w := make([]float32, n)
	scale := 1 / math.Sqrt(float64(n))
	for i := range w {
		u := modelmath.Uniform(seed, uint64(i))
		w[i] = float32((2*u - 1) * scale)
	}
	return w
}

// step is one batch, mapped and checked (model.StepRequest.View).
type step = model.Step

// Step runs one batch forward and, when training, backward and one SGD
// update. FLOPs count every multiply and add as one and a sigmoid as four.
func (m *logreg) Step(ctx context.Context, req *model.StepRequest) (*model.StepResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.Open(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("logreg step: %w", err)
	}
	B := s.Batch
	F := int64(len(m.weights))
	res := &model.StepResult{}

	// Forward: z = b + w·x, p = sigmoid(z); dz (holding z first) gets
	// d(mean loss)/dz.
	dz := make([]float32, B)
	x := make([]float32, F)
	for i := range B {
		m.features(s, i, x)
		z := m.bias
		for f, w := range m.weights {
			z += float32(w * x[f])
		}
		dz[i] = z
	}
	res.Loss = modelmath.Loss(dz, s.Labels, s.Scores, dz)
	res.FLOPs = int64(B) * (2*F + 4 + 2)
	if !req.Train {
		return res, nil
	}

	// Backward, with the weights of the forward pass: gradients of the
	// weights (accumulated over samples in batch order) and of the pooled
	// embeddings. Reading every input before writing PooledGrad keeps the
	// result right even if a host passes the same region for both.
	gw := make([]float32, F)
	var gb float32
	for i := range B {
		m.features(s, i, x)
		for f := range gw {
			gw[f] += float32(dz[i] * x[f])
		}
		gb += dz[i]
	}
	var at int64
	for _, dim := range m.dims {
		w := m.weights[at : at+int64(dim)]
		for i := range B {
			g := s.PooledGrad[int64(B)*at+int64(i*dim) : int64(B)*at+int64((i+1)*dim)]
			for d := range g {
				g[d] = dz[i] * w[d]
			}
		}
		at += int64(dim)
	}
	lr, l2 := float32(m.cfg.LearningRate), float32(m.cfg.L2)
	for f, w := range m.weights {
		g := gw[f]
		if l2 != 0 {
			g += float32(l2 * w)
		}
		m.weights[f] = w - float32(lr*g)
	}
	m.bias -= float32(lr * gb)
	updateFLOPs := 2 * F
	if l2 != 0 {
		updateFLOPs += 2 * F
	}
	res.FLOPs += int64(B)*(2*F+1+at) + updateFLOPs + 2
	return res, nil
}

// features writes sample i's input vector into x: its pooled embedding of
// each table, in table order, then its dense features.
func (m *logreg) features(s *step, i int, x []float32) {
	B := s.Batch
	var at, base int
	for _, dim := range m.dims {
		copy(x[at:at+dim], s.Pooled[base+i*dim:base+(i+1)*dim])
		at += dim
		base += B * dim
	}
	copy(x[at:], s.Dense[i*m.dense:(i+1)*m.dense])
}

// Digest is a sha256 over the weights, in feature order, then the bias,
// each as a little-endian IEEE-754 float32. SGD has no optimizer state.
func (m *logreg) Digest(context.Context) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.IsConfigured() {
		return nil, plugin.ErrNotConfigured
	}
	h := sha256.New()
	binary.Write(h, binary.LittleEndian, m.weights) // a hash's Write never fails
	binary.Write(h, binary.LittleEndian, m.bias)
	return h.Sum(nil), nil
}
