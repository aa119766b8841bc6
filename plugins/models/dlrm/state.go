package dlrm

import (
	"context"

	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// stateTag names DLRM's state format: every layer's W and b in canonical
// order, then, with Adagrad, every layer's G for W and b.
const stateTag = "dlrm/1"

// State implements model.Stater: the dense parameters and their optimizer
// state, in Digest's order.
func (m *dlrm) State(context.Context) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.IsConfigured() {
		return nil, plugin.ErrNotConfigured
	}
	return model.EncodeState(stateTag, m.stateArrays()...), nil
}

// SetState implements model.Stater: it puts back what State saved, for a
// model of the same shape and optimizer, or changes nothing.
func (m *dlrm) SetState(_ context.Context, state []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.IsConfigured() {
		return plugin.ErrNotConfigured
	}
	return model.DecodeState(state, stateTag, m.stateArrays()...)
}

// stateArrays are every layer's W and b in canonical order, then, with
// Adagrad, every layer's G for W and b.
func (m *dlrm) stateArrays() [][]float32 {
	layers := m.layers()
	out := make([][]float32, 0, 4*len(layers))
	for _, l := range layers {
		out = append(out, l.w, l.b)
	}
	for _, l := range layers {
		if l.accW != nil {
			out = append(out, l.accW, l.accB)
		}
	}
	return out
}
