package cache

import (
	"context"
	"errors"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/flowrun/flowrun/sdk/internal/pb"
	"github.com/flowrun/flowrun/sdk/internal/rpc"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// HostPlugin is the go-plugin plugin a host dispenses caches through: its
// GRPCClient returns a Cache that turns every call into one RPC. It has no
// server half.
func HostPlugin() goplugin.Plugin { return &grpcPlugin{} }

// ServerPlugin is the go-plugin plugin that serves impl. It also dispenses
// clients, so tests can put it on both ends of a connection; Serve uses it.
func ServerPlugin(impl Cache) goplugin.Plugin { return &grpcPlugin{impl: impl} }

// grpcPlugin is the go-plugin glue for caches; gRPC only.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	impl Cache
}

func (p *grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	if p.impl == nil {
		return errors.New("cache: no implementation to serve")
	}
	pb.RegisterCacheServer(s, &server{impl: p.impl})
	return nil
}

func (p *grpcPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	stub := pb.NewCacheClient(conn)
	return &client{BaseClient: rpc.BaseClient{Stub: stub}, stub: stub}, nil
}

// client is the host half: a Cache whose calls are RPCs.
type client struct {
	rpc.BaseClient
	stub pb.CacheClient
}

func (c *client) Plan(ctx context.Context, req *PlanRequest) (*PlanResult, error) {
	res, err := c.stub.Plan(ctx, &pb.PlanRequest{
		Seq:          req.Seq,
		Ids:          rpc.RefToPB(req.IDs),
		TableOffsets: req.TableOffsets,
		Slots:        rpc.RefToPB(req.Slots),
		Hits:         rpc.RefToPB(req.Hits),
		Victims:      rpc.RefToPB(req.Victims),
	})
	if err != nil {
		return nil, rpc.FromStatus(err)
	}
	out := &PlanResult{Victims: res.GetVictims(), Tables: make([]TableStats, len(res.GetTables()))}
	for i, t := range res.GetTables() {
		out.Tables[i] = TableStats{Hits: t.GetHits(), Misses: t.GetMisses(), Evictions: t.GetEvictions()}
	}
	return out, nil
}

// server is the plugin half: it turns RPCs into calls on the implementation.
type server struct {
	pb.UnimplementedCacheServer
	impl Cache
}

func (s *server) Info(ctx context.Context, _ *pb.Empty) (*pb.PluginInfo, error) {
	return rpc.ServeInfo(ctx, s.impl, plugin.KindCache)
}

func (s *server) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.Empty, error) {
	return rpc.ServeConfigure(ctx, s.impl, req)
}

func (s *server) Plan(ctx context.Context, req *pb.PlanRequest) (*pb.PlanResult, error) {
	res, err := s.impl.Plan(ctx, &PlanRequest{
		Seq:          req.GetSeq(),
		IDs:          rpc.RefFromPB(req.GetIds()),
		TableOffsets: req.GetTableOffsets(),
		Slots:        rpc.RefFromPB(req.GetSlots()),
		Hits:         rpc.RefFromPB(req.GetHits()),
		Victims:      rpc.RefFromPB(req.GetVictims()),
	})
	if err != nil {
		return nil, rpc.ToStatus(err)
	}
	out := &pb.PlanResult{}
	if res != nil {
		out.Victims = res.Victims
		out.Tables = make([]*pb.TableStats, len(res.Tables))
		for i, t := range res.Tables {
			out.Tables[i] = &pb.TableStats{Hits: t.Hits, Misses: t.Misses, Evictions: t.Evictions}
		}
	}
	return out, nil
}
