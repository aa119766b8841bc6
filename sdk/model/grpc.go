package model

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/internal/pb"
	"github.com/flowrun/flowrun/sdk/internal/rpc"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// glue is the model kind's gRPC plumbing (sdk/internal/rpc).
var glue = rpc.NewKind(plugin.KindModel, pb.RegisterModelServer, pb.NewModelClient,
	func(b rpc.BaseServer[Model]) pb.ModelServer { return &server{BaseServer: b} },
	func(b rpc.BaseClient[pb.ModelClient]) *client { return &client{b} })

// HostPlugin is the go-plugin plugin a host dispenses models through: its
// GRPCClient returns a Model that turns every call into one RPC.
func HostPlugin() goplugin.Plugin { return glue.Host() }

// ServerPlugin is the go-plugin plugin that serves impl (Serve uses it).
func ServerPlugin(impl Model) goplugin.Plugin { return glue.Server(impl) }

// client is the host half: a Model whose calls are RPCs.
type client struct {
	rpc.BaseClient[pb.ModelClient]
}

func (c *client) Step(ctx context.Context, req *StepRequest) (*StepResult, error) {
	return rpc.Call(ctx, c.Stub.Step, &pb.StepRequest{
		Seq:        req.Seq,
		Batch:      int64(req.Batch),
		Pooled:     rpc.RefToPB(req.Pooled),
		Dense:      rpc.RefToPB(req.Dense),
		Labels:     rpc.RefToPB(req.Labels),
		Train:      req.Train,
		PooledGrad: rpc.RefToPB(req.PooledGrad),
		Scores:     rpc.RefToPB(req.Scores),
	}, func(res *pb.StepResult) *StepResult {
		out := &StepResult{Loss: res.GetLoss(), FLOPs: res.GetFlops()}
		for _, l := range res.GetLayers() {
			out.Layers = append(out.Layers, device.Layer{M: l.GetM(), K: l.GetK(), N: l.GetN()})
		}
		return out
	})
}

func (c *client) Digest(ctx context.Context) ([]byte, error) {
	return rpc.Call(ctx, c.Stub.Digest, &pb.Empty{}, (*pb.DigestResult).GetDigest)
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
	return rpc.Answer(res, err, func(res *StepResult) *pb.StepResult {
		if res == nil {
			return &pb.StepResult{}
		}
		out := &pb.StepResult{Loss: res.Loss, Flops: res.FLOPs}
		for _, l := range res.Layers {
			out.Layers = append(out.Layers, &pb.Layer{M: l.M, K: l.K, N: l.N})
		}
		return out
	})
}

func (s *server) Digest(ctx context.Context, _ *pb.Empty) (*pb.DigestResult, error) {
	d, err := s.Impl.Digest(ctx)
	return rpc.Answer(d, err, func(d []byte) *pb.DigestResult { return &pb.DigestResult{Digest: d} })
}
