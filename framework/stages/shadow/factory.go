package shadow

import (
	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the shadow stage's kind.
const Kind stage.Kind = "shadow"

// NewFactory returns the shadow stage's factory. It consumes the batch's
// IDs only and produces nothing another stage reads.
func NewFactory() stage.Factory {
	return stage.New(Kind, Config{Backlog: DefaultBacklog, Nice: DefaultNice, OwnProcess: true}, create,
		stage.Requires(stage.NeedLayout|stage.NeedMetrics),
		stage.WithFields(nil, []batch.Field{batch.IDs}))
}
