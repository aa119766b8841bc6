package score

import (
	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the score stage's kind.
const Kind stage.Kind = "score"

// Scored is the candidates score scored in a batch, for its span.
var Scored = batch.NewStat("scored")

// NewFactory returns the score stage's factory.
func NewFactory() stage.Factory {
	return stage.New(Kind, Config{Reduce: "sum", HostDevice: "host", ComputeDevice: "gpu", Candidates: All}, create,
		stage.Requires(stage.NeedKernel|stage.NeedModel|stage.NeedTables|stage.NeedLayout),
		stage.WithFields(
			[]batch.Field{batch.Pooled, batch.Scores, batch.GatherBytes, Scored},
			[]batch.Field{batch.IDs, batch.Offsets, batch.Dense, batch.Labels}))
}
