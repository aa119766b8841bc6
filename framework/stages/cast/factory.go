package cast

import (
	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the cast stage's kind.
const Kind stage.Kind = "cast"

// NewFactory returns the cast stage's factory.
func NewFactory() stage.Factory {
	return stage.New(Kind, Config{Device: "gpu", Transfer: true}, create,
		stage.Requires(stage.NeedLayout),
		stage.WithFields(
			[]batch.Field{batch.CastSrc, batch.CastDst, batch.CastRows, Lookups, UniqueRows},
			[]batch.Field{batch.IDs, batch.Offsets}))
}
