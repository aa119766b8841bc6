package model

import (
	"context"

	"github.com/flowrun/flowrun/sdk/internal/pb"
	"github.com/flowrun/flowrun/sdk/internal/rpc"
)

// State implements Stater over gRPC. The answer may be larger than
// gRPC's default 4 MiB: the host accepts any size. A plugin whose model
// is no Stater (or that predates the call) answers plugin.ErrUnsupported.
func (c *client) State(ctx context.Context) ([]byte, error) {
	return rpc.GetBlob(ctx, c.Stub.State, (*pb.ModelState).GetState, "model state")
}

// SetState implements Stater over gRPC (a large state through a region).
func (c *client) SetState(ctx context.Context, state []byte) error {
	return rpc.PutBlob(ctx, state, "model-state", func(ctx context.Context, b []byte, ref *pb.Ref) error {
		_, err := c.Stub.SetState(ctx, &pb.ModelState{State: b, Ref: ref})
		return err
	}, "model state")
}

func (s *server) State(ctx context.Context, _ *pb.Empty) (*pb.ModelState, error) {
	st, err := StateOf(ctx, s.Impl)
	return rpc.Answer(st, err, func(st []byte) *pb.ModelState { return &pb.ModelState{State: st} })
}

func (s *server) SetState(ctx context.Context, req *pb.ModelState) (*pb.Empty, error) {
	err := rpc.TakeBlob(req.GetState(), req.GetRef(), "model state", func(b []byte) error { return SetStateOf(ctx, s.Impl, b) })
	return rpc.Answer(struct{}{}, err, func(struct{}) *pb.Empty { return &pb.Empty{} })
}
