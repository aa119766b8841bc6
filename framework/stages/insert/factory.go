package insert

import (
	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/hazard"
	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the insert stage's kind.
const Kind stage.Kind = "insert"

// InsertedRows and WrittenBack are the missed rows written into Storage
// and the victims written back to the host tables, for insert's span.
var InsertedRows, WrittenBack = batch.NewStat("inserted_rows"), batch.NewStat("written_back")

// NewFactory returns the insert stage's factory.
func NewFactory() stage.Factory {
	return stage.New(Kind, Config{Device: "gpu", HostDevice: "host"}, create,
		stage.Requires(stage.NeedTables|stage.NeedStorage|stage.NeedLayout),
		stage.WithFields(
			[]batch.Field{InsertedRows, WrittenBack},
			[]batch.Field{batch.Victims, batch.VictimRows, batch.MissIndex, batch.MissRows, batch.CollectedRows, batch.CollectedVictims}),
		stage.WithHazardRole(hazard.Insert))
}
