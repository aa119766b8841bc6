package rpc

import (
	"context"

	"google.golang.org/grpc"

	"github.com/flowrun/flowrun/sdk/internal/pb"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// baseStub is the part every kind's generated client shares.
type baseStub interface {
	Info(ctx context.Context, in *pb.Empty, opts ...grpc.CallOption) (*pb.PluginInfo, error)
	Configure(ctx context.Context, in *pb.ConfigureRequest, opts ...grpc.CallOption) (*pb.Empty, error)
}

// BaseClient implements plugin.Base over any kind's generated client S.
// The kinds' client halves embed it and make their batch calls on Stub too.
type BaseClient[S baseStub] struct {
	Stub S
}

// Info implements plugin.Base.
func (c BaseClient[S]) Info(ctx context.Context) (plugin.Info, error) {
	info, err := c.Stub.Info(ctx, &pb.Empty{})
	if err != nil {
		return plugin.Info{}, FromStatus(err)
	}
	return InfoFromPB(info), nil
}

// Configure implements plugin.Base.
func (c BaseClient[S]) Configure(ctx context.Context, setup plugin.Setup) error {
	_, err := c.Stub.Configure(ctx, &pb.ConfigureRequest{Setup: SetupToPB(setup)})
	return FromStatus(err)
}

// BaseServer answers the Info and Configure RPCs every kind's service
// has, from Impl. The kinds' server halves embed it, with their generated
// Unimplemented server one level deeper so that its Info and Configure do
// not shadow these.
type BaseServer[Impl plugin.Base] struct {
	Impl Impl
	// Kind fills Info's kind if Impl left it zero.
	Kind plugin.Kind
}

// Info answers a kind's Info RPC from Impl, filling the kind and API
// version if Impl left them zero.
func (s BaseServer[Impl]) Info(ctx context.Context, _ *pb.Empty) (*pb.PluginInfo, error) {
	info, err := s.Impl.Info(ctx)
	if err != nil {
		return nil, ToStatus(err)
	}
	return InfoToPB(CompleteInfo(info, s.Kind)), nil
}

// Configure answers a kind's Configure RPC from Impl.
func (s BaseServer[Impl]) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.Empty, error) {
	if err := s.Impl.Configure(ctx, SetupFromPB(req.GetSetup())); err != nil {
		return nil, ToStatus(err)
	}
	return &pb.Empty{}, nil
}
