package cache

import (
	"context"
	"errors"
	"fmt"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// Snapshotter is the optional interface of a policy whose state can be
// saved between batches and put back: what a checkpoint needs of it.
// Snapshot is an opaque encoding of everything Plan reads (ScratchPipe's
// Hit-Map and Hold mask, an LRU's recency order, an LFU's counts and
// clock, a static cache's pinned rows) that Restore, on the same policy
// configured with the same Setup, reads back; the plans that follow are
// then those the saved policy would have made. The host takes a snapshot
// only between batches: after the plan of batch k−1 and before that of
// batch k, with no future window yet sent.
//
// A policy without it restarts cold on resume: the host writes Storage
// back to the host tables and starts both empty. Results stay exact (the
// model digest does not depend on where a row lives), but the hits and
// misses after the resume differ from the run never interrupted.
type Snapshotter interface {
	Snapshot(ctx context.Context) ([]byte, error)
	Restore(ctx context.Context, snapshot []byte) error
}

// SnapshotOf is c's snapshot, or an error wrapping plugin.ErrUnsupported
// when c cannot take one.
func SnapshotOf(ctx context.Context, c Cache) ([]byte, error) {
	s, ok := c.(Snapshotter)
	if !ok {
		return nil, fmt.Errorf("cache: %w: it takes no snapshot (cache.Snapshotter)", plugin.ErrUnsupported)
	}
	return s.Snapshot(ctx)
}

// RestoreOf puts back a snapshot SnapshotOf took.
func RestoreOf(ctx context.Context, c Cache, snapshot []byte) error {
	s, ok := c.(Snapshotter)
	if !ok {
		return fmt.Errorf("cache: %w: it restores no snapshot (cache.Snapshotter)", plugin.ErrUnsupported)
	}
	return s.Restore(ctx, snapshot)
}

// ErrBadSnapshot is wrapped by Restore's errors for a snapshot that is
// not one this policy (of this Setup) took.
var ErrBadSnapshot = errors.New("cache: the snapshot is not this policy's")
