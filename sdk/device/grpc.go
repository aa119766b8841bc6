package device

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/flowrun/flowrun/sdk/internal/pb"
	"github.com/flowrun/flowrun/sdk/internal/rpc"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// glue is the device kind's gRPC plumbing (sdk/internal/rpc).
var glue = rpc.NewKind(plugin.KindDevice, pb.RegisterDeviceServer, pb.NewDeviceClient,
	func(b rpc.BaseServer[Device]) pb.DeviceServer { return &server{BaseServer: b} },
	func(b rpc.BaseClient[pb.DeviceClient]) *client { return &client{b} })

// HostPlugin is the go-plugin plugin a host dispenses devices through: its
// GRPCClient returns a Device that turns every call into one RPC.
func HostPlugin() goplugin.Plugin { return glue.Host() }

// ServerPlugin is the go-plugin plugin that serves impl (Serve uses it).
func ServerPlugin(impl Device) goplugin.Plugin { return glue.Server(impl) }

// client is the host half: a Device whose calls are RPCs.
type client struct {
	rpc.BaseClient[pb.DeviceClient]
}

func (c *client) Profile(ctx context.Context) (Profile, error) {
	return rpc.Call(ctx, c.Stub.Profile, &pb.Empty{}, profileFromPB)
}

func (c *client) Cost(ctx context.Context, req *CostRequest) (*CostResult, error) {
	in := &pb.CostRequest{Seq: req.Seq, Ops: make([]*pb.Op, len(req.Ops))}
	for i, op := range req.Ops {
		in.Ops[i] = opToPB(op)
	}
	return rpc.Call(ctx, c.Stub.Cost, in, func(res *pb.CostResult) *CostResult {
		return &CostResult{ModeledNs: res.GetModeledNs()}
	})
}

// server is the plugin half: it turns RPCs into calls on the implementation.
// rpc.BaseServer answers Info and Configure.
type server struct {
	rpc.BaseServer[Device]
	unimplemented
}

// unimplemented keeps the generated server's Info and Configure one level
// below rpc.BaseServer's, so that they do not clash.
type unimplemented struct{ pb.UnimplementedDeviceServer }

func (s *server) Profile(ctx context.Context, _ *pb.Empty) (*pb.DeviceProfile, error) {
	p, err := s.Impl.Profile(ctx)
	return rpc.Answer(p, err, profileToPB)
}

func (s *server) Cost(ctx context.Context, req *pb.CostRequest) (*pb.CostResult, error) {
	in := &CostRequest{Seq: req.GetSeq(), Ops: make([]Op, len(req.GetOps()))}
	for i, op := range req.GetOps() {
		in.Ops[i] = opFromPB(op)
	}
	res, err := s.Impl.Cost(ctx, in)
	return rpc.Answer(res, err, func(res *CostResult) *pb.CostResult {
		if res == nil {
			return &pb.CostResult{}
		}
		return &pb.CostResult{ModeledNs: res.ModeledNs}
	})
}

func profileFromPB(p *pb.DeviceProfile) Profile {
	return Profile{
		Name:          p.GetName(),
		CapacityBytes: p.GetCapacityBytes(),
		BandwidthGBps: p.GetBandwidthGbps(),
		LinkGBps:      p.GetLinkGbps(),
		LatencyNs:     p.GetLatencyNs(),
		GFLOPS:        p.GetGflops(),
		Efficiency:    p.GetEfficiency(),
		Source:        p.GetSource(),
		Servers:       p.GetServers(),
	}
}

func profileToPB(p Profile) *pb.DeviceProfile {
	return &pb.DeviceProfile{
		Name:          p.Name,
		CapacityBytes: p.CapacityBytes,
		BandwidthGbps: p.BandwidthGBps,
		LinkGbps:      p.LinkGBps,
		LatencyNs:     p.LatencyNs,
		Gflops:        p.GFLOPS,
		Efficiency:    p.Efficiency,
		Source:        p.Source,
		Servers:       p.Servers,
	}
}

func opToPB(op Op) *pb.Op {
	out := &pb.Op{Name: op.Name, Kind: int32(op.Kind), Bytes: op.Bytes, Flops: op.FLOPs, Keys: op.Keys}
	for _, l := range op.Layers {
		out.Layers = append(out.Layers, &pb.Layer{M: l.M, K: l.K, N: l.N})
	}
	return out
}

func opFromPB(op *pb.Op) Op {
	out := Op{Name: op.GetName(), Kind: OpKind(op.GetKind()), Bytes: op.GetBytes(), FLOPs: op.GetFlops(), Keys: op.GetKeys()}
	for _, l := range op.GetLayers() {
		out.Layers = append(out.Layers, Layer{M: l.GetM(), K: l.GetK(), N: l.GetN()})
	}
	return out
}
