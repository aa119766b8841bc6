package filter

import (
	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the filter stage's kind.
const Kind stage.Kind = "filter"

// Kept is the candidates filter passes on (batch.Kept: later stages read
// it with topk).
var Kept = batch.Kept

// Short is 1 on a batch whose bucket filter saw fewer than k candidates
// reach the threshold (0 otherwise; unset for an exact filter).
var Short = batch.NewStat("filter_short")

// NewFactory returns the filter stage's factory.
func NewFactory() stage.Factory {
	return stage.New(Kind, Config{K: 16, Device: "host", Mode: Exact, Bins: 16, Threshold: 0.5,
		Fallback: FallbackNone, SubBatches: 1, Candidates: All}, create,
		stage.Requires(stage.NeedLayout|stage.NeedMetrics),
		stage.WithFields([]batch.Field{batch.TopK, Kept}, []batch.Field{batch.Scores, batch.Labels}))
}
