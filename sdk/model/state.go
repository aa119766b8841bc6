package model

import (
	"context"
	"errors"
	"fmt"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// Stater is the optional interface of a model whose dense parameters and
// their optimizer state can be saved and put back: what a checkpoint
// needs of it. State is an opaque encoding the same model's SetState
// reads back (a configured model of the same config and Setup), after
// which its Digest and every later Step are those of the model that
// saved it. A host asks for it by type assertion (StateOf); over gRPC the
// host's Model always has the methods, and a plugin whose model lacks
// them answers plugin.ErrUnsupported.
type Stater interface {
	State(ctx context.Context) ([]byte, error)
	SetState(ctx context.Context, state []byte) error
}

// StateOf is m's saved state, or an error wrapping plugin.ErrUnsupported
// when m cannot save it.
func StateOf(ctx context.Context, m Model) ([]byte, error) {
	s, ok := m.(Stater)
	if !ok {
		return nil, fmt.Errorf("model: %w: it does not save its state (model.Stater)", plugin.ErrUnsupported)
	}
	return s.State(ctx)
}

// SetStateOf puts back a state StateOf saved.
func SetStateOf(ctx context.Context, m Model, state []byte) error {
	s, ok := m.(Stater)
	if !ok {
		return fmt.Errorf("model: %w: it does not restore its state (model.Stater)", plugin.ErrUnsupported)
	}
	return s.SetState(ctx, state)
}

// ErrBadState is wrapped by SetState's errors for a state that is not
// one this model (of this config) saved.
var ErrBadState = errors.New("model: the state is not this model's")
