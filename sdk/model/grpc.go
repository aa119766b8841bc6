package model

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/flowrun/flowrun/sdk/internal/pb"
	"github.com/flowrun/flowrun/sdk/internal/rpc"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// HostPlugin is the go-plugin plugin a host dispenses models through: its
// GRPCClient returns a Model that turns every call into one RPC. It has no
// server half.
func HostPlugin() goplugin.Plugin { return newPlugin(nil) }

// ServerPlugin is the go-plugin plugin that serves impl. It also dispenses
// clients, so tests can put it on both ends of a connection; Serve uses it.
func ServerPlugin(impl Model) goplugin.Plugin { return newPlugin(impl) }

// newPlugin is the go-plugin glue for models, serving impl unless it is nil.
func newPlugin(impl Model) goplugin.Plugin {
	return &rpc.GRPCPlugin[Model, *client]{Kind: plugin.KindModel, Impl: impl, Register: register, NewClient: newClient}
}

func register(s *grpc.Server, base rpc.BaseServer[Model]) {
	pb.RegisterModelServer(s, &server{BaseServer: base})
}

func newClient(conn *grpc.ClientConn) *client {
	return &client{rpc.BaseClient[pb.ModelClient]{Stub: pb.NewModelClient(conn)}}
}

// client is the host half: a Model whose calls are RPCs.
type client struct {
	rpc.BaseClient[pb.ModelClient]
}

func (c *client) Step(ctx context.Context, req *StepRequest) (*StepResult, error) {
	res, err := c.Stub.Step(ctx, &pb.StepRequest{
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
	res, err := c.Stub.Digest(ctx, &pb.Empty{})
	if err != nil {
		return nil, rpc.FromStatus(err)
	}
	return res.GetDigest(), nil
}

// server is the plugin half: it turns RPCs into calls on the implementation.
// rpc.BaseServer answers Info and Configure.
type server struct {
	rpc.BaseServer[Model]
	unimplemented
}

// unimplemented keeps the generated server's Info and Configure one level
// below rpc.BaseServer's, so that they do not clash.
type unimplemented struct{ pb.UnimplementedModelServer }

func (s *server) Step(ctx context.Context, req *pb.StepRequest) (*pb.StepResult, error) {
	res, err := s.Impl.Step(ctx, &StepRequest{
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
	d, err := s.Impl.Digest(ctx)
	if err != nil {
		return nil, rpc.ToStatus(err)
	}
	return &pb.DigestResult{Digest: d}, nil
}
