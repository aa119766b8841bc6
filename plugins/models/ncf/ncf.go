// Package ncf is neural matrix factorization (NeuMF: He et al., "Neural
// Collaborative Filtering", WWW 2017), the model RecPipe trains on
// MovieLens (Gupta et al., MICRO'21, Sec. 4): a GMF path (the element-wise
// product of the user's and the item's latent factors) beside an MLP tower
// over their concatenated factors, joined by one output layer into a
// click logit, trained with binary cross-entropy and SGD.
//
// Its input is a pooled embedding per table, all of one dim d, table 0
// the user's and table 1 the item's: each vector's first gmf_dim values
// are GMF factors, the rest MLP factors (NeuMF keeps separate GMF and MLP
// embeddings; here they are two parts of one row, so that one table per
// field serves both). The GMF path multiplies the user's and the item's
// GMF factors; the tower takes every table's MLP factors and the dense
// features, concatenated, so that with exactly the two tables and no
// dense features (MovieLens) it is He et al.'s NeuMF, and further tables
// or features are side inputs of the tower (their GMF factors are unused
// and get a zero gradient). It returns the gradient of the mean batch
// loss with respect to the pooled embeddings, so the embedding rows train
// too.
//
// Arithmetic is float32 in a fixed order, every added product converted
// explicitly so Go cannot fuse it into an FMA: the digest does not depend
// on the machine. It imports only sdk/.
package ncf

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/model/modelmath"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Name is the model's plugin name (builtin:ncf).
const Name = "ncf"

// Version is this plugin's version.
const Version = "0.1.0"

// seedDomain keeps this model's initial weights apart from other plugins'
// draws of the same seed.
const seedDomain = 0x6e6366 // "ncf"

type ncf struct {
	mu sync.Mutex
	model.Batches
	cfg      Config
	gmf, mlp int // factors of each path per embedding
	tables   int
	dense    int
	tower    []*layer
	out      *layer // [gmf + last tower width] → 1
}

// New returns the NCF model.
func New() model.Model { return &ncf{} }

func (m *ncf) Info(context.Context) (plugin.Info, error) {
	return model.NewInfo(Name, Version,
		"NeuMF (GMF + MLP neural collaborative filtering) on a user and an item embedding, BCE loss, SGD", fields()), nil
}

func (m *ncf) Configure(_ context.Context, setup plugin.Setup) error {
	cfg, err := model.DecodeConfig(setup, defaultConfig())
	if err != nil {
		return err
	}
	if len(setup.Tables) < 2 {
		return errShape("needs ≥ 2 tables (users, items, then any side features), got %d", len(setup.Tables))
	}
	for t, tab := range setup.Tables {
		if tab.Dim != setup.Tables[0].Dim {
			return errShape("every table must have the users' dim %d, table %d has %d", setup.Tables[0].Dim, t, tab.Dim)
		}
	}
	if setup.DenseFeatures < 0 {
		return errShape("dense_features must be ≥ 0, got %d", setup.DenseFeatures)
	}
	gmf, mlp, err := cfg.split(setup.Tables[0].Dim)
	if err != nil {
		return err
	}
	var tower []*layer
	in, p := len(setup.Tables)*mlp+setup.DenseFeatures, uint64(0)
	for _, w := range cfg.Layers {
		tower = append(tower, newLayer(in, w, true, setup.Seed, &p))
		in = w
	}
	out := newLayer(gmf+in, 1, false, setup.Seed, &p)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg, m.gmf, m.mlp, m.tower, m.out = cfg, gmf, mlp, tower, out
	m.tables, m.dense = len(setup.Tables), setup.DenseFeatures
	m.Configured(setup)
	return nil
}

// layers is every dense layer in canonical order: the tower, then the
// output layer.
func (m *ncf) layers() []*layer { return append(append([]*layer{}, m.tower...), m.out) }

// Step runs one batch forward and, when training, backward and one SGD
// update of every dense parameter. Loss is the batch's mean BCE before
// the update.
func (m *ncf) Step(ctx context.Context, req *model.StepRequest) (*model.StepResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.Open(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("ncf step: %w", err)
	}
	B := s.Batch
	acts := m.forward(s)
	logits := acts[len(acts)-1]
	dz := make([]float32, B)
	res := &model.StepResult{FLOPs: m.flops(B, req.Train), Layers: m.shapes(B)}
	res.Loss = modelmath.Loss(logits, s.Labels, s.Scores, dz)
	if req.Train {
		m.backward(s, acts, dz)
		for _, l := range m.layers() {
			l.update(float32(m.cfg.LearningRate))
		}
	}
	return res, nil
}

// width is the tower's input width: every table's MLP factors, then the
// dense features.
func (m *ncf) width() int { return m.tables*m.mlp + m.dense }

// vec is sample i's pooled embedding of table t ([table][sample][dim]).
func (m *ncf) vec(p []float32, B, t, i int) []float32 {
	d := m.gmf + m.mlp
	return p[(t*B+i)*d : (t*B+i+1)*d]
}

// input writes the output layer's and the tower's inputs of sample i:
// the GMF product of the user's and the item's factors into phi, every
// table's MLP factors and the dense features, concatenated, into x.
func (m *ncf) input(s *model.Step, i int, phi, x []float32) {
	u, v := m.vec(s.Pooled, s.Batch, 0, i), m.vec(s.Pooled, s.Batch, 1, i)
	for k := range m.gmf {
		phi[k] = float32(u[k] * v[k])
	}
	for t := range m.tables {
		copy(x[t*m.mlp:(t+1)*m.mlp], m.vec(s.Pooled, s.Batch, t, i)[m.gmf:])
	}
	copy(x[m.tables*m.mlp:], s.Dense[i*m.dense:(i+1)*m.dense])
}

// forward is every layer's output over the batch, [B][width] each, the
// output layer's (the logits) last; acts[0] is the output layer's input
// [B][gmf + last width] and acts[1] the tower's input [B][width()].
func (m *ncf) forward(s *model.Step) [][]float32 {
	B := s.Batch
	last := m.tower[len(m.tower)-1].out
	join := make([]float32, B*(m.gmf+last))
	W := m.width()
	x := make([]float32, B*W)
	for i := range B {
		m.input(s, i, join[i*(m.gmf+last):i*(m.gmf+last)+m.gmf], x[i*W:(i+1)*W])
	}
	acts := [][]float32{join, x}
	for _, l := range m.tower {
		x = l.forward(B, x)
		acts = append(acts, x)
	}
	for i := range B {
		copy(join[i*(m.gmf+last)+m.gmf:(i+1)*(m.gmf+last)], x[i*last:(i+1)*last])
	}
	return append(acts, m.out.forward(B, join))
}

// backward takes dz = d(mean loss)/d(logit) down the output layer, the
// tower and the GMF product, leaving every layer's gradients set and the
// pooled embeddings' gradient in PooledGrad. Every input is read before
// PooledGrad is written, so the host may pass one region for both.
func (m *ncf) backward(s *model.Step, acts [][]float32, dz []float32) {
	B, d, W := s.Batch, m.gmf+m.mlp, m.width()
	last := m.tower[len(m.tower)-1].out
	n := len(m.tower)
	dJoin := m.out.backward(B, acts[0], acts[n+2], dz)
	g := make([]float32, B*last)
	for i := range B {
		copy(g[i*last:(i+1)*last], dJoin[i*(m.gmf+last)+m.gmf:(i+1)*(m.gmf+last)])
	}
	for k := n - 1; k >= 0; k-- {
		g = m.tower[k].backward(B, acts[k+1], acts[k+2], g)
	}
	du := make([]float32, m.tables*B*d) // [table][sample][dim]; unused GMF factors stay 0
	for i := range B {
		u, v := m.vec(s.Pooled, B, 0, i), m.vec(s.Pooled, B, 1, i)
		gu, gv := m.vec(du, B, 0, i), m.vec(du, B, 1, i)
		dphi := dJoin[i*(m.gmf+last) : i*(m.gmf+last)+m.gmf]
		for k := range m.gmf {
			gu[k] = float32(dphi[k] * v[k])
			gv[k] = float32(dphi[k] * u[k])
		}
		for t := range m.tables {
			copy(m.vec(du, B, t, i)[m.gmf:], g[i*W+t*m.mlp:i*W+(t+1)*m.mlp])
		}
	}
	copy(s.PooledGrad, du)
}

// shapes is the forward pass's matrix products for B samples, the tower
// then the output layer (the GMF product has no weights: no layer), for a
// device that prices a systolic array's tiling.
func (m *ncf) shapes(B int) []device.Layer {
	var out []device.Layer
	for _, l := range m.layers() {
		out = append(out, device.Layer{M: int64(B), K: int64(l.in), N: int64(l.out)})
	}
	return out
}

// flops counts every multiply and add as one and a sigmoid as four: the
// GMF product, each layer's product, bias and ReLU, the sigmoid; training
// adds the loss gradient, each layer's backward (weight and input
// gradients, ReLU masks), the GMF gradients and two per parameter of SGD.
func (m *ncf) flops(B int, train bool) int64 {
	b := int64(B)
	f := b*int64(m.gmf) + 4*b
	for _, l := range m.layers() {
		f += l.forwardFLOPs(b)
	}
	if !train {
		return f
	}
	f += 2*b + 2*b*int64(m.gmf)
	for _, l := range m.layers() {
		f += l.backwardFLOPs(b) + 2*l.params()
	}
	return f
}

// Digest is a sha256 over every layer's W (row-major [out][in]) then b,
// tower first to last, then the output layer, each value a little-endian
// IEEE-754 float32. SGD keeps no optimizer state.
func (m *ncf) Digest(context.Context) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.IsConfigured() {
		return nil, plugin.ErrNotConfigured
	}
	h := sha256.New()
	for _, l := range m.layers() {
		binary.Write(h, binary.LittleEndian, l.w) // a hash's Write never fails
		binary.Write(h, binary.LittleEndian, l.b)
	}
	return h.Sum(nil), nil
}
