package dlrm

import (
	"context"
	"fmt"

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
	w := model.NewStateWriter(stateTag)
	layers := m.layers()
	for _, l := range layers {
		w.Floats(l.w)
		w.Floats(l.b)
	}
	for _, l := range layers {
		if l.accW != nil {
			w.Floats(l.accW)
			w.Floats(l.accB)
		}
	}
	return w.Bytes(), nil
}

// SetState implements model.Stater: it puts back what State saved, for a
// model of the same shape and optimizer, or changes nothing.
func (m *dlrm) SetState(_ context.Context, state []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.IsConfigured() {
		return plugin.ErrNotConfigured
	}
	r, err := model.NewStateReader(state, stateTag)
	if err != nil {
		return err
	}
	layers := m.layers()
	// Read into copies, so that a bad state leaves the model as it was.
	fresh := make([][]float32, 0, 4*len(layers))
	read := func(src []float32, what string) {
		dst := make([]float32, len(src))
		r.Floats(dst, what)
		fresh = append(fresh, dst)
	}
	for i, l := range layers {
		read(l.w, fmt.Sprintf("layer %d W", i))
		read(l.b, fmt.Sprintf("layer %d b", i))
	}
	for i, l := range layers {
		if l.accW != nil {
			read(l.accW, fmt.Sprintf("layer %d Adagrad G of W", i))
			read(l.accB, fmt.Sprintf("layer %d Adagrad G of b", i))
		}
	}
	if err := r.Close(); err != nil {
		return err
	}
	k := 0
	for _, l := range layers {
		copy(l.w, fresh[k])
		copy(l.b, fresh[k+1])
		k += 2
	}
	for _, l := range layers {
		if l.accW != nil {
			copy(l.accW, fresh[k])
			copy(l.accB, fresh[k+1])
			k += 2
		}
	}
	return nil
}
