package model

import (
	"context"
	"errors"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/flowrun/flowrun/sdk/internal/pb"
	"github.com/flowrun/flowrun/sdk/internal/rpc"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// HostPlugin is the go-plugin plugin a host dispenses models through: its
// GRPCClient returns a Model that turns every call into one RPC. It has no
// server half.
func HostPlugin() goplugin.Plugin { return &grpcPlugin{} }

// ServerPlugin is the go-plugin plugin that serves impl. It also dispenses
// clients, so tests can put it on both ends of a connection; Serve uses it.
func ServerPlugin(impl Model) goplugin.Plugin { return &grpcPlugin{impl: impl} }

// grpcPlugin is the go-plugin glue for models; gRPC only.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	impl Model
}

func (p *grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	if p.impl == nil {
		return errors.New("model: no implementation to serve")
	}
	pb.RegisterModelServer(s, &server{impl: p.impl})
	return nil
}

func (p *grpcPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	stub := pb.NewModelClient(conn)
	return &client{BaseClient: rpc.BaseClient{Stub: stub}, stub: stub}, nil
}

// client is the host half: a Model whose calls are RPCs.
type client struct {
	rpc.BaseClient
	stub pb.ModelClient
}

func (c *client) Step(ctx context.Context, req *StepRequest) (*StepResult, error) {
	res, err := c.stub.Step(ctx, &pb.StepRequest{
		Seq:        req.Seq,
		Batch:      int64(req.Batch),
		Pooled:     rpc.RefToPB(req.Pooled),
		Dense:      rpc.RefToPB(req.Dense),
		Labels:     rpc.RefToPB(req.Labels),
		Train:      req.Train,
		PooledGrad: rpc.RefToPB(req.PooledGrad),
		Scores:     rpc.RefToPB(req.Scores),
	})
	if err != nil {
		return nil, rpc.FromStatus(err)
	}
	return &StepResult{Loss: res.GetLoss(), FLOPs: res.GetFlops()}, nil
}

func (c *client) Digest(ctx context.Context) ([]byte, error) {
	res, err := c.stub.Digest(ctx, &pb.Empty{})
	if err != nil {
		return nil, rpc.FromStatus(err)
	}
	return res.GetDigest(), nil
}

// server is the plugin half: it turns RPCs into calls on the implementation.
type server struct {
	pb.UnimplementedModelServer
	impl Model
}

func (s *server) Info(ctx context.Context, _ *pb.Empty) (*pb.PluginInfo, error) {
	return rpc.ServeInfo(ctx, s.impl, plugin.KindModel)
}

func (s *server) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.Empty, error) {
	return rpc.ServeConfigure(ctx, s.impl, req)
}

func (s *server) Step(ctx context.Context, req *pb.StepRequest) (*pb.StepResult, error) {
	res, err := s.impl.Step(ctx, &StepRequest{
		Seq:        req.GetSeq(),
		Batch:      int(req.GetBatch()),
		Pooled:     rpc.RefFromPB(req.GetPooled()),
		Dense:      rpc.RefFromPB(req.GetDense()),
		Labels:     rpc.RefFromPB(req.GetLabels()),
		Train:      req.GetTrain(),
		PooledGrad: rpc.RefFromPB(req.GetPooledGrad()),
		Scores:     rpc.RefFromPB(req.GetScores()),
	})
	if err != nil {
		return nil, rpc.ToStatus(err)
	}
	if res == nil {
		return &pb.StepResult{}, nil
	}
	return &pb.StepResult{Loss: res.Loss, Flops: res.FLOPs}, nil
}

func (s *server) Digest(ctx context.Context, _ *pb.Empty) (*pb.DigestResult, error) {
	d, err := s.impl.Digest(ctx)
	if err != nil {
		return nil, rpc.ToStatus(err)
	}
	return &pb.DigestResult{Digest: d}, nil
}
