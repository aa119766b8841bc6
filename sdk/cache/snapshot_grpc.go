package cache

import (
	"context"

	"github.com/flowrun/flowrun/sdk/internal/pb"
	"github.com/flowrun/flowrun/sdk/internal/rpc"
)

// Snapshot implements Snapshotter over gRPC; the answer may have any
// size. A policy that is no Snapshotter (or a plugin that predates the
// call) answers plugin.ErrUnsupported.
func (c *client) Snapshot(ctx context.Context) ([]byte, error) {
	return rpc.GetBlob(ctx, c.Stub.Snapshot, (*pb.CacheSnapshot).GetSnapshot, "cache snapshot")
}

// Restore implements Snapshotter over gRPC (a large snapshot through a
// region).
func (c *client) Restore(ctx context.Context, snapshot []byte) error {
	return rpc.PutBlob(ctx, snapshot, "cache-snapshot", func(ctx context.Context, b []byte, ref *pb.Ref) error {
		_, err := c.Stub.Restore(ctx, &pb.CacheSnapshot{Snapshot: b, Ref: ref})
		return err
	}, "cache snapshot")
}

func (s *server) Snapshot(ctx context.Context, _ *pb.Empty) (*pb.CacheSnapshot, error) {
	snap, err := SnapshotOf(ctx, s.Impl)
	return rpc.Answer(snap, err, func(b []byte) *pb.CacheSnapshot { return &pb.CacheSnapshot{Snapshot: b} })
}

func (s *server) Restore(ctx context.Context, req *pb.CacheSnapshot) (*pb.Empty, error) {
	err := rpc.TakeBlob(req.GetSnapshot(), req.GetRef(), "cache snapshot", func(b []byte) error { return RestoreOf(ctx, s.Impl, b) })
	return rpc.Answer(struct{}{}, err, func(struct{}) *pb.Empty { return &pb.Empty{} })
}
