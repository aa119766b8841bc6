package collect

import (
	"context"
	"errors"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/hazard"
	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the collect stage's kind.
const Kind stage.Kind = "collect"

// The stats collect records on each batch for its span; the counts insert
// and exchange read are batch.CollectedRows and batch.CollectedVictims.
var (
	// Bypassed is the lookups the plan left without a slot.
	Bypassed = batch.NewStat("bypassed")
	// CollectBytes is the bytes of the rows staged.
	CollectBytes = batch.NewStat("collect_bytes")
)

// NewFactory returns the collect stage's factory.
func NewFactory() stage.Factory {
	return stage.NewFactory(Kind,
		func() stage.Config { return &Config{Device: "host", StorageDevice: "gpu"} },
		func(_ context.Context, set stage.Settings, cfg stage.Config) (any, error) {
			c := cfg.(*Config)
			if set.Tables == nil || set.Storage == nil || set.Layout == nil {
				return nil, errors.New("collect needs the host tables, the Storage and the batch layout")
			}
			col := &collector{set: set, cfg: c, slotOf: map[int64]int64{}, rowIn: map[int64]int64{},
				victimOf: make([]map[int64]int64, set.Layout.Tables)}
			for t := range col.victimOf {
				col.victimOf[t] = map[int64]int64{}
			}
			var err error
			if col.host, err = set.Device("device", c.Device); err != nil {
				return nil, err
			}
			col.dev, err = set.Device("storage_device", c.StorageDevice)
			return col, err
		},
		stage.WithFields(
			[]batch.Field{batch.MissRows, batch.MissIndex, batch.VictimRows, batch.CollectedRows, batch.CollectedVictims, Bypassed, CollectBytes},
			[]batch.Field{batch.IDs, batch.Slots, batch.Hits, batch.Victims, batch.VictimCount}),
		stage.WithHazardRole(hazard.Collect))
}
