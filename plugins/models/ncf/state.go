package ncf

import (
	"context"

	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// stateTag names ncf's state format: each layer's W then b, in canonical
// order (SGD keeps no optimizer state).
const stateTag = "ncf/1"

func (m *ncf) arrays() [][]float32 {
	var out [][]float32
	for _, l := range m.layers() {
		out = append(out, l.w, l.b)
	}
	return out
}

// State implements model.Stater.
func (m *ncf) State(context.Context) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.IsConfigured() {
		return nil, plugin.ErrNotConfigured
	}
	return model.EncodeState(stateTag, m.arrays()...), nil
}

// SetState implements model.Stater; a bad state changes nothing.
func (m *ncf) SetState(_ context.Context, state []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.IsConfigured() {
		return plugin.ErrNotConfigured
	}
	return model.DecodeState(state, stateTag, m.arrays()...)
}
