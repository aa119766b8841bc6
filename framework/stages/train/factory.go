package train

import (
	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/hazard"
	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the train stage's kind.
const Kind stage.Kind = "train"

// ScatterBytes and CoalescedRows are the bytes the optimizer update wrote
// and, when coalescing is a step of its own, the rows it coalesced to:
// stats of train's span.
var ScatterBytes, CoalescedRows = batch.NewStat("scatter_bytes"), batch.NewStat("coalesced_rows")

// NewFactory returns the train stage's factory. What train reads besides
// the loaded batch depends on its options (Config.BatchFields).
func NewFactory() stage.Factory {
	return stage.New(Kind,
		Config{LearningRate: 0.05, Reduce: "sum", HostDevice: "host", ComputeDevice: "gpu", Source: SourceHost, Backward: BackwardCoalesce},
		create,
		stage.Requires(stage.NeedKernel|stage.NeedModel),
		stage.WithFields(
			[]batch.Field{batch.Pooled, batch.Grads, batch.Scores, batch.GatherBytes, ScatterBytes, CoalescedRows},
			[]batch.Field{batch.IDs, batch.Offsets, batch.Dense, batch.Labels}),
		stage.WithHazardRole(hazard.Train))
}
