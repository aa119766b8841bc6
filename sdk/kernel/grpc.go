package kernel

import (
	"context"
	"fmt"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/flowrun/flowrun/sdk/internal/pb"
	"github.com/flowrun/flowrun/sdk/internal/rpc"
	"github.com/flowrun/flowrun/sdk/kernel/quant"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// glue is the kernel kind's gRPC plumbing (sdk/internal/rpc).
var glue = rpc.NewKind(plugin.KindKernel, pb.RegisterKernelServer, pb.NewKernelClient,
	func(b rpc.BaseServer[Kernel]) pb.KernelServer { return &server{BaseServer: b} },
	func(b rpc.BaseClient[pb.KernelClient]) *client { return &client{b} })

// HostPlugin is the go-plugin plugin a host dispenses kernels through: its
// GRPCClient returns a Kernel that turns every call into one RPC.
func HostPlugin() goplugin.Plugin { return glue.Host() }

// ServerPlugin is the go-plugin plugin that serves impl (Serve uses it).
func ServerPlugin(impl Kernel) goplugin.Plugin { return glue.Server(impl) }

// client is the host half: a Kernel whose calls are RPCs.
type client struct {
	rpc.BaseClient[pb.KernelClient]
}

func (c *client) GatherReduce(ctx context.Context, req *GatherReduceRequest) (*Result, error) {
	return rpc.Call(ctx, c.Stub.GatherReduce, &pb.GatherReduceRequest{
		Tables: tablesToPB(req.Tables),
		Bags:   bagsToPB(req.Bags),
		Reduce: int32(req.Reduce),
		Out:    rpc.RefToPB(req.Out),
	}, resultFromPB)
}

func (c *client) Scatter(ctx context.Context, req *ScatterRequest) (*Result, error) {
	return rpc.Call(ctx, c.Stub.Scatter, &pb.ScatterRequest{
		Tables:       tablesToPB(req.Tables),
		Bags:         bagsToPB(req.Bags),
		Reduce:       int32(req.Reduce),
		Grads:        rpc.RefToPB(req.Grads),
		Optimizer:    int32(req.Optimizer),
		LearningRate: req.LearningRate,
		Epsilon:      req.Epsilon,
	}, resultFromPB)
}

func (c *client) ExpandCoalesce(ctx context.Context, req *ExpandCoalesceRequest) (*CoalesceResult, error) {
	return rpc.Call(ctx, c.Stub.ExpandCoalesce, &pb.ExpandCoalesceRequest{
		Tables: tablesToPB(req.Tables),
		Bags:   bagsToPB(req.Bags),
		Reduce: int32(req.Reduce),
		Grads:  rpc.RefToPB(req.Grads),
		Out:    coalescedToPB(req.Out),
	}, func(res *pb.CoalesceResult) *CoalesceResult {
		return &CoalesceResult{Result: *resultFromPB(res.GetResult()), Counts: res.GetCounts()}
	})
}

func (c *client) Apply(ctx context.Context, req *ApplyRequest) (*Result, error) {
	return rpc.Call(ctx, c.Stub.Apply, &pb.ApplyRequest{
		Tables:       tablesToPB(req.Tables),
		Coalesced:    coalescedToPB(req.Coalesced),
		Optimizer:    int32(req.Optimizer),
		LearningRate: req.LearningRate,
		Epsilon:      req.Epsilon,
	}, resultFromPB)
}

// server is the plugin half: it turns RPCs into calls on the implementation.
// rpc.BaseServer answers Info and Configure.
type server struct {
	rpc.BaseServer[Kernel]
	unimplemented
}

// unimplemented keeps the generated server's Info and Configure one level
// below rpc.BaseServer's, so that they do not clash.
type unimplemented struct{ pb.UnimplementedKernelServer }

func (s *server) GatherReduce(ctx context.Context, req *pb.GatherReduceRequest) (*pb.KernelResult, error) {
	res, err := s.Impl.GatherReduce(ctx, &GatherReduceRequest{
		Tables: tablesFromPB(req.GetTables()),
		Bags:   bagsFromPB(req.GetBags()),
		Reduce: Reduce(req.GetReduce()),
		Out:    rpc.RefFromPB(req.GetOut()),
	})
	return rpc.Answer(res, err, resultToPB)
}

func (s *server) Scatter(ctx context.Context, req *pb.ScatterRequest) (*pb.KernelResult, error) {
	res, err := s.Impl.Scatter(ctx, &ScatterRequest{
		Tables:       tablesFromPB(req.GetTables()),
		Bags:         bagsFromPB(req.GetBags()),
		Reduce:       Reduce(req.GetReduce()),
		Grads:        rpc.RefFromPB(req.GetGrads()),
		Optimizer:    Optimizer(req.GetOptimizer()),
		LearningRate: req.GetLearningRate(),
		Epsilon:      req.GetEpsilon(),
	})
	return rpc.Answer(res, err, resultToPB)
}

func (s *server) ExpandCoalesce(ctx context.Context, req *pb.ExpandCoalesceRequest) (*pb.CoalesceResult, error) {
	res, err := s.Impl.ExpandCoalesce(ctx, &ExpandCoalesceRequest{
		Tables: tablesFromPB(req.GetTables()),
		Bags:   bagsFromPB(req.GetBags()),
		Reduce: Reduce(req.GetReduce()),
		Grads:  rpc.RefFromPB(req.GetGrads()),
		Out:    coalescedFromPB(req.GetOut()),
	})
	return rpc.Answer(res, err, func(res *CoalesceResult) *pb.CoalesceResult {
		if res == nil {
			return &pb.CoalesceResult{Result: &pb.KernelResult{}}
		}
		return &pb.CoalesceResult{Result: resultToPB(&res.Result), Counts: res.Counts}
	})
}

func (s *server) Apply(ctx context.Context, req *pb.ApplyRequest) (*pb.KernelResult, error) {
	res, err := s.Impl.Apply(ctx, &ApplyRequest{
		Tables:       tablesFromPB(req.GetTables()),
		Coalesced:    coalescedFromPB(req.GetCoalesced()),
		Optimizer:    Optimizer(req.GetOptimizer()),
		LearningRate: req.GetLearningRate(),
		Epsilon:      req.GetEpsilon(),
	})
	return rpc.Answer(res, err, resultToPB)
}

func tablesToPB(ts []Table) []*pb.KernelTable {
	out := make([]*pb.KernelTable, len(ts))
	for i, t := range ts {
		out[i] = &pb.KernelTable{Data: rpc.RefToPB(t.Data), Rows: t.Rows, Dim: int64(t.Dim), Stride: int64(t.Stride), Index: rpc.RefToPB(t.Index)}
	}
	return out
}

func tablesFromPB(ts []*pb.KernelTable) []Table {
	out := make([]Table, len(ts))
	for i, t := range ts {
		out[i] = Table{Data: rpc.RefFromPB(t.GetData()), Rows: t.GetRows(), Dim: int(t.GetDim()), Stride: int(t.GetStride()), Index: rpc.RefFromPB(t.GetIndex())}
	}
	return out
}

func bagsToPB(b Bags) *pb.Bags {
	return &pb.Bags{
		Batch:      int64(b.Batch),
		Indices:    rpc.RefToPB(b.Indices),
		IndexStart: b.IndexStart,
		Offsets:    rpc.RefToPB(b.Offsets),
	}
}

func bagsFromPB(b *pb.Bags) Bags {
	return Bags{
		Batch:      int(b.GetBatch()),
		Indices:    rpc.RefFromPB(b.GetIndices()),
		IndexStart: b.GetIndexStart(),
		Offsets:    rpc.RefFromPB(b.GetOffsets()),
	}
}

func coalescedToPB(c Coalesced) *pb.Coalesced {
	return &pb.Coalesced{
		Rows:      rpc.RefToPB(c.Rows),
		Grads:     rpc.RefToPB(c.Grads),
		RowStart:  c.RowStart,
		GradStart: c.GradStart,
		Counts:    c.Counts,
	}
}

func coalescedFromPB(c *pb.Coalesced) Coalesced {
	return Coalesced{
		Rows:      rpc.RefFromPB(c.GetRows()),
		Grads:     rpc.RefFromPB(c.GetGrads()),
		RowStart:  c.GetRowStart(),
		GradStart: c.GetGradStart(),
		Counts:    c.GetCounts(),
	}
}

func resultToPB(r *Result) *pb.KernelResult {
	if r == nil {
		return &pb.KernelResult{}
	}
	return &pb.KernelResult{BytesRead: r.BytesRead, BytesWritten: r.BytesWritten, Flops: r.FLOPs}
}

func resultFromPB(r *pb.KernelResult) *Result {
	return &Result{BytesRead: r.GetBytesRead(), BytesWritten: r.GetBytesWritten(), FLOPs: r.GetFlops()}
}

func (c *client) Quantize(ctx context.Context, req *ConvertRequest) (*Result, error) {
	return rpc.Call(ctx, c.Stub.Quantize, convertToPB(req), resultFromPB)
}

func (c *client) Dequantize(ctx context.Context, req *ConvertRequest) (*Result, error) {
	return rpc.Call(ctx, c.Stub.Dequantize, convertToPB(req), resultFromPB)
}

func (s *server) Quantize(ctx context.Context, req *pb.ConvertRequest) (*pb.KernelResult, error) {
	q, ok := s.Impl.(Quantizer)
	if !ok {
		return rpc.Answer[*Result](nil, fmt.Errorf("%w: %s", plugin.ErrUnsupported, OpQuantize), resultToPB)
	}
	res, err := q.Quantize(ctx, convertFromPB(req))
	return rpc.Answer(res, err, resultToPB)
}

func (s *server) Dequantize(ctx context.Context, req *pb.ConvertRequest) (*pb.KernelResult, error) {
	q, ok := s.Impl.(Quantizer)
	if !ok {
		return rpc.Answer[*Result](nil, fmt.Errorf("%w: %s", plugin.ErrUnsupported, OpDequantize), resultToPB)
	}
	res, err := q.Dequantize(ctx, convertFromPB(req))
	return rpc.Answer(res, err, resultToPB)
}

func convertToPB(r *ConvertRequest) *pb.ConvertRequest {
	ts := make([]*pb.LowTable, len(r.Tables))
	for i, t := range r.Tables {
		ts[i] = &pb.LowTable{Values: rpc.RefToPB(t.Values), State: rpc.RefToPB(t.State), Rows: t.Rows, Dim: int64(t.Dim),
			StateFloats: int64(t.StateFloats), Precision: int32(t.Precision), Emulated: t.Emulated}
	}
	return &pb.ConvertRequest{Tables: ts, Rows: rpc.RefToPB(r.Rows), RowStart: r.RowStart, Counts: r.Counts,
		Fp32: rpc.RefToPB(r.FP32), Fp32Start: r.FP32Start, Rounding: int32(r.Rounding), Seed: r.Seed, Batch: r.Batch}
}

func convertFromPB(r *pb.ConvertRequest) *ConvertRequest {
	ts := make([]LowTable, len(r.GetTables()))
	for i, t := range r.GetTables() {
		ts[i] = LowTable{Values: rpc.RefFromPB(t.GetValues()), State: rpc.RefFromPB(t.GetState()), Rows: t.GetRows(), Dim: int(t.GetDim()),
			StateFloats: int(t.GetStateFloats()), Precision: quant.Precision(t.GetPrecision()), Emulated: t.GetEmulated()}
	}
	return &ConvertRequest{Tables: ts, Rows: rpc.RefFromPB(r.GetRows()), RowStart: r.GetRowStart(), Counts: r.GetCounts(),
		FP32: rpc.RefFromPB(r.GetFp32()), FP32Start: r.GetFp32Start(), Rounding: quant.Rounding(r.GetRounding()), Seed: r.GetSeed(), Batch: r.GetBatch()}
}

var _ Quantizer = (*client)(nil)
