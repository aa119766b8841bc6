package logreg

import (
	"context"

	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// stateTag names logreg's state format: the weights, then the bias (SGD
// keeps no optimizer state).
const stateTag = "logreg/1"

// State implements model.Stater.
func (m *logreg) State(context.Context) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.IsConfigured() {
		return nil, plugin.ErrNotConfigured
	}
	w := model.NewStateWriter(stateTag)
	w.Floats(m.weights)
	w.Floats([]float32{m.bias})
	return w.Bytes(), nil
}

// SetState implements model.Stater; a bad state changes nothing.
func (m *logreg) SetState(_ context.Context, state []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.IsConfigured() {
		return plugin.ErrNotConfigured
	}
	r, err := model.NewStateReader(state, stateTag)
	if err != nil {
		return err
	}
	weights, bias := make([]float32, len(m.weights)), make([]float32, 1)
	r.Floats(weights, "weights")
	r.Floats(bias, "bias")
	if err := r.Close(); err != nil {
		return err
	}
	copy(m.weights, weights)
	m.bias = bias[0]
	return nil
}
