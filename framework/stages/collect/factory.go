package collect

import (
	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/hazard"
	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the collect stage's kind.
const Kind stage.Kind = "collect"

// Bypassed and CollectBytes are the lookups the plan left without a slot
// and the bytes of the rows staged, for collect's span; the counts insert
// and exchange read are batch.CollectedRows and batch.CollectedVictims.
var Bypassed, CollectBytes = batch.NewStat("bypassed"), batch.NewStat("collect_bytes")

// NewFactory returns the collect stage's factory.
func NewFactory() stage.Factory {
	return stage.New(Kind, Config{Device: "host", StorageDevice: "gpu"}, create,
		stage.Requires(stage.NeedTables|stage.NeedStorage|stage.NeedLayout),
		stage.WithFields(
			[]batch.Field{batch.MissRows, batch.MissIndex, batch.VictimRows, batch.CollectedRows, batch.CollectedVictims, Bypassed, CollectBytes},
			[]batch.Field{batch.IDs, batch.Slots, batch.Hits, batch.Victims, batch.VictimCount}),
		stage.WithHazardRole(hazard.Collect))
}
