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
	return model.EncodeState(stateTag, m.weights, []float32{m.bias}), nil
}

// SetState implements model.Stater; a bad state changes nothing.
func (m *logreg) SetState(_ context.Context, state []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.IsConfigured() {
		return plugin.ErrNotConfigured
	}
	bias := []float32{m.bias}
	if err := model.DecodeState(state, stateTag, m.weights, bias); err != nil {
		return err
	}
	m.bias = bias[0]
	return nil
}
