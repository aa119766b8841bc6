package cache

import (
	"context"
	"fmt"
	"math"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flowrun/flowrun/sdk/internal/pb"
	"github.com/flowrun/flowrun/sdk/internal/rpc"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// snapshotInMessage is the largest snapshot Restore sends in its message;
// a larger one goes through a shared-memory region (a plugin's gRPC
// server takes messages of 4 MiB at most).
const snapshotInMessage = 1 << 20

// Snapshot implements Snapshotter over gRPC; the answer may have any
// size. A policy that is no Snapshotter (or a plugin that predates the
// call) answers plugin.ErrUnsupported.
func (c *client) Snapshot(ctx context.Context) ([]byte, error) {
	res, err := c.Stub.Snapshot(ctx, &pb.Empty{}, grpc.MaxCallRecvMsgSize(math.MaxInt32))
	if err != nil {
		return nil, unsupportedIfUnimplemented(err)
	}
	return res.GetSnapshot(), nil
}

// Restore implements Snapshotter over gRPC.
func (c *client) Restore(ctx context.Context, snapshot []byte) error {
	msg := &pb.CacheSnapshot{Snapshot: snapshot}
	if len(snapshot) > snapshotInMessage {
		r, err := region.Create("cache-snapshot", int64(len(snapshot)))
		if err != nil {
			return fmt.Errorf("cache snapshot: %w", err)
		}
		defer r.Close()
		copy(r.Bytes(), snapshot)
		msg = &pb.CacheSnapshot{Ref: rpc.RefToPB(r.Ref())}
	}
	_, err := c.Stub.Restore(ctx, msg)
	return unsupportedIfUnimplemented(err)
}

func unsupportedIfUnimplemented(err error) error {
	if err == nil {
		return nil
	}
	if st, ok := status.FromError(err); ok && st.Code() == codes.Unimplemented {
		return fmt.Errorf("cache: %w: %s", plugin.ErrUnsupported, st.Message())
	}
	return rpc.FromStatus(err)
}

func (s *server) Snapshot(ctx context.Context, _ *pb.Empty) (*pb.CacheSnapshot, error) {
	snap, err := SnapshotOf(ctx, s.Impl)
	return rpc.Answer(snap, err, func(b []byte) *pb.CacheSnapshot { return &pb.CacheSnapshot{Snapshot: b} })
}

func (s *server) Restore(ctx context.Context, req *pb.CacheSnapshot) (*pb.Empty, error) {
	snap := req.GetSnapshot()
	if ref := rpc.RefFromPB(req.GetRef()); !ref.IsZero() {
		var m region.Mapper
		defer m.Close()
		b, err := m.Bytes(ref)
		if err != nil {
			return nil, rpc.ToStatus(fmt.Errorf("%w: cache snapshot: %v", plugin.ErrInvalidRequest, err))
		}
		snap = b
	}
	err := RestoreOf(ctx, s.Impl, snap)
	return rpc.Answer(struct{}{}, err, func(struct{}) *pb.Empty { return &pb.Empty{} })
}
