package model

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

// stateInMessage is the largest state SetState sends in its message; a
// larger one goes through a shared-memory region (a plugin's gRPC server
// takes messages of 4 MiB at most).
const stateInMessage = 1 << 20

// State implements Stater over gRPC. The answer may be larger than
// gRPC's default 4 MiB: the host accepts any size. A plugin whose model
// is no Stater (or that predates the call) answers plugin.ErrUnsupported.
func (c *client) State(ctx context.Context) ([]byte, error) {
	res, err := c.Stub.State(ctx, &pb.Empty{}, grpc.MaxCallRecvMsgSize(math.MaxInt32))
	if err != nil {
		return nil, unsupportedIfUnimplemented(err)
	}
	return res.GetState(), nil
}

// SetState implements Stater over gRPC.
func (c *client) SetState(ctx context.Context, state []byte) error {
	msg := &pb.ModelState{State: state}
	if len(state) > stateInMessage {
		r, err := region.Create("model-state", int64(len(state)))
		if err != nil {
			return fmt.Errorf("model state: %w", err)
		}
		defer r.Close()
		copy(r.Bytes(), state)
		msg = &pb.ModelState{Ref: rpc.RefToPB(r.Ref())}
	}
	_, err := c.Stub.SetState(ctx, msg)
	return unsupportedIfUnimplemented(err)
}

func unsupportedIfUnimplemented(err error) error {
	if err == nil {
		return nil
	}
	if st, ok := status.FromError(err); ok && st.Code() == codes.Unimplemented {
		return fmt.Errorf("model: %w: %s", plugin.ErrUnsupported, st.Message())
	}
	return rpc.FromStatus(err)
}

func (s *server) State(ctx context.Context, _ *pb.Empty) (*pb.ModelState, error) {
	st, err := StateOf(ctx, s.Impl)
	return rpc.Answer(st, err, func(st []byte) *pb.ModelState { return &pb.ModelState{State: st} })
}

func (s *server) SetState(ctx context.Context, req *pb.ModelState) (*pb.Empty, error) {
	state := req.GetState()
	if ref := rpc.RefFromPB(req.GetRef()); !ref.IsZero() {
		var m region.Mapper
		defer m.Close()
		b, err := m.Bytes(ref)
		if err != nil {
			return nil, rpc.ToStatus(fmt.Errorf("%w: model state: %v", plugin.ErrInvalidRequest, err))
		}
		state = b
	}
	err := SetStateOf(ctx, s.Impl, state)
	return rpc.Answer(struct{}{}, err, func(struct{}) *pb.Empty { return &pb.Empty{} })
}
