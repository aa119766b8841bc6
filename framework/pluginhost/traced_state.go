package pluginhost

import (
	"context"

	"github.com/flowrun/flowrun/sdk/cache"
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

// Snapshot and Restore keep a policy's optional cache.Snapshotter through
// the host's wrapper; a policy without it answers plugin.ErrUnsupported.

func (c *tracedCache) Snapshot(ctx context.Context) ([]byte, error) {
	return traced(ctx, c.tr, "Snapshot", func(ctx context.Context) ([]byte, error) { return cache.SnapshotOf(ctx, c.impl) }, nil)
}

func (c *tracedCache) Restore(ctx context.Context, snapshot []byte) error {
	_, err := traced(ctx, c.tr, "Restore", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, cache.RestoreOf(ctx, c.impl, snapshot)
	}, nil)
	return err
}
