package insert

import (
	"context"
	"errors"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/hazard"
	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the insert stage's kind.
const Kind stage.Kind = "insert"

// The stats insert records on each batch, for its span.
var (
	// InsertedRows is the missed rows written into Storage.
	InsertedRows = batch.NewStat("inserted_rows")
	// WrittenBack is the victims written back to the host tables.
	WrittenBack = batch.NewStat("written_back")
)

// NewFactory returns the insert stage's factory.
func NewFactory() stage.Factory {
	return stage.NewFactory(Kind,
		func() stage.Config { return &Config{Device: "gpu", HostDevice: "host"} },
		func(_ context.Context, set stage.Settings, cfg stage.Config) (any, error) {
			c := cfg.(*Config)
			if set.Tables == nil || set.Storage == nil || set.Layout == nil {
				return nil, errors.New("insert needs the host tables, the Storage and the batch layout")
			}
			ins := &inserter{set: set, cfg: c}
			var err error
			if ins.dev, err = set.Device("device", c.Device); err != nil {
				return nil, err
			}
			ins.host, err = set.Device("host_device", c.HostDevice)
			return ins, err
		},
		stage.WithFields(
			[]batch.Field{InsertedRows, WrittenBack},
			[]batch.Field{batch.Victims, batch.VictimRows, batch.MissIndex, batch.MissRows, batch.CollectedRows, batch.CollectedVictims}),
		stage.WithHazardRole(hazard.Insert))
}
