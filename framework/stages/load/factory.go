package load

import (
	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the load stage's kind.
const Kind stage.Kind = "load"

// Samples and Lookups are the batch's samples and the length of its IDs
// array, for its span.
var Samples, Lookups = batch.NewStat("samples"), batch.NewStat("ids")

// NewFactory returns the load stage's factory.
func NewFactory() stage.Factory {
	return stage.New(Kind, Config{Eval: true}, create,
		stage.AsSource(),
		stage.WithFields([]batch.Field{batch.IDs, batch.Offsets, batch.Dense, batch.Labels, Samples, Lookups}, nil))
}
