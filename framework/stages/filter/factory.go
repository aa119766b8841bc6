package filter

import (
	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the filter stage's kind.
const Kind stage.Kind = "filter"

// Kept is the candidates filter passes on, for its span.
var Kept = batch.NewStat("kept")

// NewFactory returns the filter stage's factory.
func NewFactory() stage.Factory {
	return stage.New(Kind, Config{K: 16, Device: "host"}, create,
		stage.Requires(stage.NeedLayout|stage.NeedMetrics),
		stage.WithFields([]batch.Field{batch.TopK, Kept}, []batch.Field{batch.Scores, batch.Labels}))
}
