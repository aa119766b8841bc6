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

// BaseClient implements plugin.Base over any kind's generated client. The
// kinds' client halves embed it.
type BaseClient struct {
	Stub baseStub
}

// Info implements plugin.Base.
func (c BaseClient) Info(ctx context.Context) (plugin.Info, error) {
	info, err := c.Stub.Info(ctx, &pb.Empty{})
	if err != nil {
		return plugin.Info{}, FromStatus(err)
	}
	return InfoFromPB(info), nil
}

// Configure implements plugin.Base.
func (c BaseClient) Configure(ctx context.Context, setup plugin.Setup) error {
	_, err := c.Stub.Configure(ctx, &pb.ConfigureRequest{Setup: SetupToPB(setup)})
	return FromStatus(err)
}

// ServeInfo answers a kind's Info RPC from impl, filling the kind and API
// version if impl left them zero.
func ServeInfo(ctx context.Context, impl plugin.Base, kind plugin.Kind) (*pb.PluginInfo, error) {
	info, err := impl.Info(ctx)
	if err != nil {
		return nil, ToStatus(err)
	}
	return InfoToPB(CompleteInfo(info, kind)), nil
}

// ServeConfigure answers a kind's Configure RPC from impl.
func ServeConfigure(ctx context.Context, impl plugin.Base, req *pb.ConfigureRequest) (*pb.Empty, error) {
	if err := impl.Configure(ctx, SetupFromPB(req.GetSetup())); err != nil {
		return nil, ToStatus(err)
	}
	return &pb.Empty{}, nil
}
