package pluginhost

import (
	"context"

	"github.com/flowrun/flowrun/sdk/model"
)

// State and SetState keep a model's optional model.Stater through the
// host's wrapper (a checkpoint saves the dense model with them); a model
// without it answers plugin.ErrUnsupported, as over gRPC.

func (m *tracedModel) State(ctx context.Context) ([]byte, error) {
	return traced(ctx, m.tr, "State", func(ctx context.Context) ([]byte, error) { return model.StateOf(ctx, m.impl) }, nil)
}

func (m *tracedModel) SetState(ctx context.Context, state []byte) error {
	_, err := traced(ctx, m.tr, "SetState", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, model.SetStateOf(ctx, m.impl, state)
	}, nil)
	return err
}
