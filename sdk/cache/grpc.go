package cache

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flowrun/flowrun/sdk/internal/pb"
	"github.com/flowrun/flowrun/sdk/internal/rpc"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// HostPlugin is the go-plugin plugin a host dispenses caches through: its
// GRPCClient returns a Cache that turns every call into one RPC. It has no
// server half.
func HostPlugin() goplugin.Plugin { return newPlugin(nil) }

// ServerPlugin is the go-plugin plugin that serves impl. It also dispenses
// clients, so tests can put it on both ends of a connection; Serve uses it.
func ServerPlugin(impl Cache) goplugin.Plugin { return newPlugin(impl) }

// newPlugin is the go-plugin glue for caches, serving impl unless it is nil.
func newPlugin(impl Cache) goplugin.Plugin {
	return &rpc.GRPCPlugin[Cache, *client]{Kind: plugin.KindCache, Impl: impl, Register: register, NewClient: newClient}
}

func register(s *grpc.Server, base rpc.BaseServer[Cache]) {
	pb.RegisterCacheServer(s, &server{BaseServer: base})
}

func newClient(conn *grpc.ClientConn) *client {
	return &client{rpc.BaseClient[pb.CacheClient]{Stub: pb.NewCacheClient(conn)}}
}

// client is the host half: a Cache whose calls are RPCs.
type client struct {
	rpc.BaseClient[pb.CacheClient]
}

func (c *client) Plan(ctx context.Context, req *PlanRequest) (*PlanResult, error) {
	res, err := c.Stub.Plan(ctx, &pb.PlanRequest{
		Seq:          req.Seq,
		Ids:          rpc.RefToPB(req.IDs),
		TableOffsets: req.TableOffsets,
		Slots:        rpc.RefToPB(req.Slots),
		Hits:         rpc.RefToPB(req.Hits),
		Victims:      rpc.RefToPB(req.Victims),
		Future:       windowsToPB(req.Future),
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

// Needs implements Declarer: it asks the plugin, which answers the zero
// Needs when its policy declares none. A plugin built before the Needs call
// existed answers Unimplemented, which is the zero Needs too.
func (c *client) Needs(ctx context.Context, setup plugin.Setup) (Needs, error) {
	res, err := c.Stub.Needs(ctx, &pb.ConfigureRequest{Setup: rpc.SetupToPB(setup)})
	if status.Code(err) == codes.Unimplemented {
		return Needs{}, nil
	}
	if err != nil {
		return Needs{}, rpc.FromStatus(err)
	}
	return Needs{
		HoldsWindows:   res.GetHoldsWindows(),
		Past:           int(res.GetPast()),
		Future:         int(res.GetFuture()),
		NeverBypasses:  res.GetNeverBypasses(),
		ProfileBatches: int(res.GetProfileBatches()),
	}, nil
}

// server is the plugin half: it turns RPCs into calls on the implementation.
// rpc.BaseServer answers Info and Configure.
type server struct {
	rpc.BaseServer[Cache]
	unimplemented
}

// unimplemented keeps the generated server's Info and Configure one level
// below rpc.BaseServer's, so that they do not clash.
type unimplemented struct{ pb.UnimplementedCacheServer }

func (s *server) Plan(ctx context.Context, req *pb.PlanRequest) (*pb.PlanResult, error) {
	res, err := s.Impl.Plan(ctx, &PlanRequest{
		Seq:          req.GetSeq(),
		IDs:          rpc.RefFromPB(req.GetIds()),
		TableOffsets: req.GetTableOffsets(),
		Slots:        rpc.RefFromPB(req.GetSlots()),
		Hits:         rpc.RefFromPB(req.GetHits()),
		Victims:      rpc.RefFromPB(req.GetVictims()),
		Future:       windowsFromPB(req.GetFuture()),
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

// Needs answers with NeedsOf: the zero Needs when Impl declares none.
func (s *server) Needs(ctx context.Context, req *pb.ConfigureRequest) (*pb.CacheNeeds, error) {
	n, err := NeedsOf(ctx, s.Impl, rpc.SetupFromPB(req.GetSetup()))
	if err != nil {
		return nil, rpc.ToStatus(err)
	}
	return &pb.CacheNeeds{
		HoldsWindows:   n.HoldsWindows,
		Past:           int64(n.Past),
		Future:         int64(n.Future),
		NeverBypasses:  n.NeverBypasses,
		ProfileBatches: int64(n.ProfileBatches),
	}, nil
}

func windowsToPB(ws []Window) []*pb.Window {
	if len(ws) == 0 {
		return nil
	}
	out := make([]*pb.Window, len(ws))
	for i, w := range ws {
		out[i] = &pb.Window{Seq: w.Seq, Ids: rpc.RefToPB(w.IDs)}
	}
	return out
}

func windowsFromPB(ws []*pb.Window) []Window {
	if len(ws) == 0 {
		return nil
	}
	out := make([]Window, len(ws))
	for i, w := range ws {
		out[i] = Window{Seq: w.GetSeq(), IDs: rpc.RefFromPB(w.GetIds())}
	}
	return out
}
