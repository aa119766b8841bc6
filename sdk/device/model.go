package device

import (
	"context"

	"github.com/flowrun/flowrun/sdk/internal/pb"
	"github.com/flowrun/flowrun/sdk/internal/rpc"
)

// ModelDescriber is a Device whose Cost is the standard cost model of
// sdk/device/costmodel evaluated on parameters it can hand over (JSON of
// costmodel.Params). A host may then evaluate Cost itself
// (costmodel.Local), with no call to the device per batch: batch-granular
// plugin calls, with the device plugin still the one that decides the
// figures. A device whose Cost is anything else must not implement it.
type ModelDescriber interface {
	CostModel(ctx context.Context) ([]byte, error)
}

// CostModel asks the plugin for its cost model. A plugin whose device is
// not a ModelDescriber (or an older binary) answers an error, and the host
// keeps calling Cost.
func (c *client) CostModel(ctx context.Context) ([]byte, error) {
	return rpc.Call(ctx, c.Stub.CostModel, &pb.Empty{}, func(res *pb.CostModelParams) []byte { return res.GetJson() })
}

func (s *server) CostModel(ctx context.Context, _ *pb.Empty) (*pb.CostModelParams, error) {
	d, ok := s.Impl.(ModelDescriber)
	if !ok {
		return s.unimplemented.CostModel(ctx, nil)
	}
	js, err := d.CostModel(ctx)
	return rpc.Answer(js, err, func(js []byte) *pb.CostModelParams { return &pb.CostModelParams{Json: js} })
}
