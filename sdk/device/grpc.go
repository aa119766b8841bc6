package device

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/flowrun/flowrun/sdk/internal/pb"
	"github.com/flowrun/flowrun/sdk/internal/rpc"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// HostPlugin is the go-plugin plugin a host dispenses devices through: its
// GRPCClient returns a Device that turns every call into one RPC. It has no
// server half.
func HostPlugin() goplugin.Plugin { return newPlugin(nil) }

// ServerPlugin is the go-plugin plugin that serves impl. It also dispenses
// clients, so tests can put it on both ends of a connection; Serve uses it.
func ServerPlugin(impl Device) goplugin.Plugin { return newPlugin(impl) }

// newPlugin is the go-plugin glue for devices, serving impl unless it is nil.
func newPlugin(impl Device) goplugin.Plugin {
	return &rpc.GRPCPlugin[Device, *client]{Kind: plugin.KindDevice, Impl: impl, Register: register, NewClient: newClient}
}

func register(s *grpc.Server, base rpc.BaseServer[Device]) {
	pb.RegisterDeviceServer(s, &server{BaseServer: base})
}

func newClient(conn *grpc.ClientConn) *client {
	return &client{rpc.BaseClient[pb.DeviceClient]{Stub: pb.NewDeviceClient(conn)}}
}

// client is the host half: a Device whose calls are RPCs.
type client struct {
	rpc.BaseClient[pb.DeviceClient]
}

func (c *client) Profile(ctx context.Context) (Profile, error) {
	p, err := c.Stub.Profile(ctx, &pb.Empty{})
	if err != nil {
		return Profile{}, rpc.FromStatus(err)
	}
	return Profile{
		Name:          p.GetName(),
		CapacityBytes: p.GetCapacityBytes(),
		BandwidthGBps: p.GetBandwidthGbps(),
		LinkGBps:      p.GetLinkGbps(),
		LatencyNs:     p.GetLatencyNs(),
		GFLOPS:        p.GetGflops(),
		Efficiency:    p.GetEfficiency(),
		Source:        p.GetSource(),
	}, nil
}

func (c *client) Cost(ctx context.Context, req *CostRequest) (*CostResult, error) {
	in := &pb.CostRequest{Seq: req.Seq, Ops: make([]*pb.Op, len(req.Ops))}
	for i, op := range req.Ops {
		in.Ops[i] = &pb.Op{Name: op.Name, Kind: int32(op.Kind), Bytes: op.Bytes, Flops: op.FLOPs}
	}
	res, err := c.Stub.Cost(ctx, in)
	if err != nil {
		return nil, rpc.FromStatus(err)
	}
	return &CostResult{ModeledNs: res.GetModeledNs()}, nil
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
	if err != nil {
		return nil, rpc.ToStatus(err)
	}
	return &pb.DeviceProfile{
		Name:          p.Name,
		CapacityBytes: p.CapacityBytes,
		BandwidthGbps: p.BandwidthGBps,
		LinkGbps:      p.LinkGBps,
		LatencyNs:     p.LatencyNs,
		Gflops:        p.GFLOPS,
		Efficiency:    p.Efficiency,
		Source:        p.Source,
	}, nil
}

func (s *server) Cost(ctx context.Context, req *pb.CostRequest) (*pb.CostResult, error) {
	in := &CostRequest{Seq: req.GetSeq(), Ops: make([]Op, len(req.GetOps()))}
	for i, op := range req.GetOps() {
		in.Ops[i] = Op{Name: op.GetName(), Kind: OpKind(op.GetKind()), Bytes: op.GetBytes(), FLOPs: op.GetFlops()}
	}
	res, err := s.Impl.Cost(ctx, in)
	if err != nil {
		return nil, rpc.ToStatus(err)
	}
	if res == nil {
		return &pb.CostResult{}, nil
	}
	return &pb.CostResult{ModeledNs: res.ModeledNs}, nil
}
