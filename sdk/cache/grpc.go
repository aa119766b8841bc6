package cache

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flowrun/flowrun/sdk/internal/pb"
	"github.com/flowrun/flowrun/sdk/internal/rpc"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// glue is the cache kind's gRPC plumbing (sdk/internal/rpc).
var glue = rpc.NewKind(plugin.KindCache, pb.RegisterCacheServer, pb.NewCacheClient,
	func(b rpc.BaseServer[Cache]) pb.CacheServer { return &server{BaseServer: b} },
	func(b rpc.BaseClient[pb.CacheClient]) *client { return &client{b} })

// HostPlugin is the go-plugin plugin a host dispenses caches through: its
// GRPCClient returns a Cache (and a Declarer) that turns every call into
// one RPC.
func HostPlugin() goplugin.Plugin { return glue.Host() }

// ServerPlugin is the go-plugin plugin that serves impl (Serve uses it).
func ServerPlugin(impl Cache) goplugin.Plugin { return glue.Server(impl) }

// client is the host half: a Cache whose calls are RPCs.
type client struct {
	rpc.BaseClient[pb.CacheClient]
}

func (c *client) Plan(ctx context.Context, req *PlanRequest) (*PlanResult, error) {
	return rpc.Call(ctx, c.Stub.Plan, &pb.PlanRequest{
		Seq:          req.Seq,
		Ids:          rpc.RefToPB(req.IDs),
		TableOffsets: req.TableOffsets,
		Slots:        rpc.RefToPB(req.Slots),
		Hits:         rpc.RefToPB(req.Hits),
		Victims:      rpc.RefToPB(req.Victims),
		Future:       windowsToPB(req.Future),
	}, planResultFromPB)
}

// Needs implements Declarer: it asks the plugin, which answers the zero
// Needs when its policy declares none. A plugin built before the Needs call
// existed answers Unimplemented, which is the zero Needs too.
func (c *client) Needs(ctx context.Context, setup plugin.Setup) (Needs, error) {
	n, err := rpc.Call(ctx, c.Stub.Needs, &pb.ConfigureRequest{Setup: rpc.SetupToPB(setup)}, needsFromPB)
	if status.Code(err) == codes.Unimplemented {
		return Needs{}, nil
	}
	return n, err
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
	return rpc.Answer(res, err, planResultToPB)
}

// Needs answers with NeedsOf: the zero Needs when Impl declares none.
func (s *server) Needs(ctx context.Context, req *pb.ConfigureRequest) (*pb.CacheNeeds, error) {
	n, err := NeedsOf(ctx, s.Impl, rpc.SetupFromPB(req.GetSetup()))
	return rpc.Answer(n, err, needsToPB)
}

func planResultFromPB(res *pb.PlanResult) *PlanResult {
	out := &PlanResult{Victims: res.GetVictims(), Tables: make([]TableStats, len(res.GetTables()))}
	for i, t := range res.GetTables() {
		out.Tables[i] = TableStats{Hits: t.GetHits(), Misses: t.GetMisses(), Evictions: t.GetEvictions(),
			DistinctHits: t.GetDistinctHits(), DistinctMisses: t.GetDistinctMisses(), HotLookups: t.GetHotLookups()}
	}
	return out
}

func planResultToPB(res *PlanResult) *pb.PlanResult {
	out := &pb.PlanResult{}
	if res == nil {
		return out
	}
	out.Victims = res.Victims
	out.Tables = make([]*pb.TableStats, len(res.Tables))
	for i, t := range res.Tables {
		out.Tables[i] = &pb.TableStats{Hits: t.Hits, Misses: t.Misses, Evictions: t.Evictions,
			DistinctHits: t.DistinctHits, DistinctMisses: t.DistinctMisses, HotLookups: t.HotLookups}
	}
	return out
}

func needsFromPB(n *pb.CacheNeeds) Needs {
	return Needs{
		HoldsWindows:   n.GetHoldsWindows(),
		Past:           int(n.GetPast()),
		Future:         int(n.GetFuture()),
		NeverBypasses:  n.GetNeverBypasses(),
		ProfileBatches: int(n.GetProfileBatches()),
		Memory:         memoryFromPB(n.GetMemory()),
	}
}

// memoryFromPB is Needs.Memory from the wire: nil when none was sent.
func memoryFromPB(ms []*pb.CacheMemory) []TableMemory {
	if len(ms) == 0 {
		return nil
	}
	out := make([]TableMemory, len(ms))
	for i, m := range ms {
		out[i] = TableMemory{CachedRows: m.GetCachedRows(), CachedRowBytes: m.GetCachedRowBytes(), RowBytes: m.GetRowBytes()}
	}
	return out
}

func needsToPB(n Needs) *pb.CacheNeeds {
	return &pb.CacheNeeds{
		HoldsWindows:   n.HoldsWindows,
		Past:           int64(n.Past),
		Future:         int64(n.Future),
		NeverBypasses:  n.NeverBypasses,
		ProfileBatches: int64(n.ProfileBatches),
		Memory:         memoryToPB(n.Memory),
	}
}

func memoryToPB(ms []TableMemory) []*pb.CacheMemory {
	if len(ms) == 0 {
		return nil
	}
	out := make([]*pb.CacheMemory, len(ms))
	for i, m := range ms {
		out[i] = &pb.CacheMemory{CachedRows: m.CachedRows, CachedRowBytes: m.CachedRowBytes, RowBytes: m.RowBytes}
	}
	return out
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
