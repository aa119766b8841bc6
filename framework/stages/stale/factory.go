package stale

import (
	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/stages/internal/staleness"
)

// Kind is the stale stage's kind.
const Kind stage.Kind = "stale"

// StaleRows is, per batch, the distinct rows it reads one update old: a
// stat of the stage's span (train's too, with its staleness option).
var StaleRows = staleness.StaleRows

// NewFactory returns the stale stage's factory.
func NewFactory() stage.Factory {
	return stage.New(Kind, Config{Source: SourceStorage}, create,
		stage.Requires(stage.NeedTables|stage.NeedLayout|stage.NeedMetrics),
		stage.WithFields([]batch.Field{StaleRows}, []batch.Field{batch.IDs, batch.Offsets}))
}
