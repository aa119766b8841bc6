package testplugins

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Logistic is a logistic regression over the concatenated pooled embeddings
// and dense features, trained by SGD on the mean binary cross-entropy.
type Logistic struct {
	mu sync.Mutex
	// Batches checks and maps the step requests (model.StepRequest.View).
	model.Batches
	setup  *plugin.Setup
	lr     float32
	w      []float32 // pooled features (table-major), then dense features
	bias   float32
	pooled int // number of pooled inputs per sample
}

// NewLogistic returns an unconfigured model.
func NewLogistic() *Logistic { return &Logistic{} }

type logisticOptions struct {
	LearningRate float32 `json:"learning_rate"`
}

func (m *Logistic) Info(context.Context) (plugin.Info, error) {
	return plugin.Info{
		Kind:        plugin.KindModel,
		Name:        "test-logistic",
		Version:     "0.1.0",
		Description: "reference logistic regression for the SDK's tests",
		Config:      []plugin.Field{{Name: "learning_rate", Type: "float", Default: "0.5", Description: "SGD step"}},
	}, nil
}

func (m *Logistic) Configure(_ context.Context, setup plugin.Setup) error {
	opts := logisticOptions{LearningRate: 0.5}
	if err := plugin.DecodeOptions(setup.Options, &opts); err != nil {
		return err
	}
	if opts.LearningRate <= 0 {
		return fmt.Errorf("%w: learning_rate must be > 0", plugin.ErrInvalidConfig)
	}
	pooled := 0
	for _, t := range setup.Tables {
		pooled += t.Dim
	}
	rng := rand.New(rand.NewPCG(setup.Seed, 0x5eed))
	w := make([]float32, pooled+setup.DenseFeatures)
	for i := range w {
		w[i] = float32(rng.NormFloat64() * 0.01)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setup, m.lr, m.w, m.bias, m.pooled = &setup, opts.LearningRate, w, 0, pooled
	m.Configured(setup)
	return nil
}

func (m *Logistic) Step(ctx context.Context, req *model.StepRequest) (*model.StepResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, err := m.Open(ctx, req)
	if err != nil {
		return nil, err
	}
	B := v.Batch
	if m.setup.BatchSize > 0 && B > m.setup.BatchSize {
		return nil, fmt.Errorf("%w: batch %d (setup batch size %d)", plugin.ErrInvalidRequest, B, m.setup.BatchSize)
	}
	nd := m.setup.DenseFeatures
	pooled, dense, labels, scores := v.Pooled, v.Dense, v.Labels, v.Scores

	// input returns feature j of sample s: pooled is [table][sample][dim].
	input := func(s, j int) float32 {
		if j >= m.pooled {
			return dense[s*nd+j-m.pooled]
		}
		off := 0
		for _, t := range m.setup.Tables {
			if j < off+t.Dim {
				return pooled[off*B+s*t.Dim+j-off]
			}
			off += t.Dim
		}
		panic("unreachable")
	}
	nf := len(m.w)
	dz := make([]float32, B)
	var loss float64
	for s := 0; s < B; s++ {
		z := m.bias
		for j := 0; j < nf; j++ {
			z += m.w[j] * input(s, j)
		}
		p := 1 / (1 + math.Exp(-float64(z)))
		y := float64(labels[s])
		loss -= y*math.Log(math.Max(p, 1e-12)) + (1-y)*math.Log(math.Max(1-p, 1e-12))
		dz[s] = float32((p - y) / float64(B))
		if scores != nil {
			scores[s] = float32(p)
		}
	}
	res := &model.StepResult{Loss: loss / float64(B), FLOPs: int64(4 * B * nf)}
	if !req.Train {
		return res, nil
	}
	grad := v.PooledGrad
	off := 0
	for _, t := range m.setup.Tables {
		for s := 0; s < B; s++ {
			for d := 0; d < t.Dim; d++ {
				grad[off*B+s*t.Dim+d] = dz[s] * m.w[off+d]
			}
		}
		off += t.Dim
	}
	for j := 0; j < nf; j++ {
		var g float32
		for s := 0; s < B; s++ {
			g += dz[s] * input(s, j)
		}
		m.w[j] -= m.lr * g
	}
	var gb float32
	for s := 0; s < B; s++ {
		gb += dz[s]
	}
	m.bias -= m.lr * gb
	res.FLOPs *= 3
	return res, nil
}

func (m *Logistic) Digest(context.Context) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.setup == nil {
		return nil, plugin.ErrNotConfigured
	}
	h := sha256.New()
	var b [4]byte
	for _, w := range append(m.w, m.bias) {
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(w))
		h.Write(b[:])
	}
	return h.Sum(nil), nil
}
