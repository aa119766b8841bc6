package plan

import (
	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the plan stage's kind.
const Kind stage.Kind = "plan"

// The stats plan records on each batch for its span (the policy's hits
// and evictions, and the later batches whose IDs came with the request);
// the misses and the victims, which stages downstream read, are
// batch.Misses and batch.VictimCount.
var Hits, Evictions, Future = batch.NewStat("hits"), batch.NewStat("evictions"), batch.NewStat("future")

// NewFactory returns the plan stage's factory.
func NewFactory() stage.Factory {
	return stage.New(Kind, Config{PastWindow: DefaultPastWindow, FutureWindow: DefaultFutureWindow}, create,
		stage.Requires(stage.NeedCache),
		stage.WithFields(
			[]batch.Field{batch.Slots, batch.Hits, batch.Victims, batch.Misses, batch.VictimCount, Hits, Evictions, Future},
			[]batch.Field{batch.IDs}))
}
