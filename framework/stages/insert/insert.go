// Package insert is ScratchPipe's [Insert] stage: it writes the rows the
// collect stage staged to where they belong. Victims first, into the host
// tables (Storage held the trained copy; the host's was stale), then the
// missed rows into their Storage slots, recording which row each slot now
// holds. After insert every row the batch looks up is in Storage, so train
// with source: storage sees only hits.
package insert

import (
	"context"
	"fmt"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/sdk/device"
)

type inserter struct {
	set       stage.Settings
	cfg       *Config
	dev, host device.Device
	// low writes victims back into low-precision host tables.
	low lowWriteBack
}

func (in *inserter) Process(ctx context.Context, b *batch.Batch) error {
	nMiss, err := batch.CollectedRows.Need(b, "insert")
	if err != nil {
		return err
	}
	nVictims, err := batch.CollectedVictims.Need(b, "insert")
	if err != nil {
		return err
	}
	victims, err := batch.Victims.View(b)
	if err != nil {
		return err
	}
	victimRows, err := batch.VictimRows.View(b)
	if err != nil {
		return err
	}
	missIndex, err := batch.MissIndex.View(b)
	if err != nil {
		return err
	}
	missRows, err := batch.MissRows.View(b)
	if err != nil {
		return err
	}
	st := in.set.Storage
	// Whole rows travel: values and optimizer state, Stride floats each.
	stride := int64(in.set.Layout.Stride)
	if nVictims < 0 || 3*nVictims > int64(len(victims)) || nVictims*stride > int64(len(victimRows)) ||
		nMiss < 0 || 3*nMiss > int64(len(missIndex)) || nMiss*stride > int64(len(missRows)) {
		return fmt.Errorf("batch %d: %d missed rows and %d victims do not fit the batch's arrays", b.Seq, nMiss, nVictims)
	}

	// Check everything before writing anything: a bad triple must not
	// leave Storage half-updated.
	for i := range nVictims {
		if err := in.check(b.Seq, "victim", i, victims[3*i], victims[3*i+1], victims[3*i+2]); err != nil {
			return err
		}
	}
	for i := range nMiss {
		if err := in.check(b.Seq, "missed row", i, missIndex[3*i], missIndex[3*i+1], missIndex[3*i+2]); err != nil {
			return err
		}
	}
	// Write-back before fill: a victim's slot is reused by a miss of the
	// same batch, and its row must reach the host before it is gone.
	// A low-precision table stores the row down-converted, keyed by this
	// batch (the kernel's quantize, lowprec.go).
	if err := in.writeBack(ctx, b.Seq, victims, victimRows, nVictims); err != nil {
		return err
	}
	for i := range nVictims {
		t, row, slot := victims[3*i], victims[3*i+1], victims[3*i+2]
		if st.RowOf(int(t), slot) == row {
			st.Evict(int(t), slot)
		}
	}
	for i := range nMiss {
		t, row, slot := missIndex[3*i], missIndex[3*i+1], missIndex[3*i+2]
		st.Fill(int(t), slot, row, missRows[i*stride:(i+1)*stride])
	}

	rowBytes := 4 * stride
	// The device fills Storage while the host writes the victims back
	// (ScratchPipe Sec. III-B, [Insert]).
	ns, err := stage.ChargeParallel(ctx, b,
		stage.Work{Name: in.cfg.Device, Device: in.dev, Ops: []device.Op{{Name: "fill-storage", Kind: device.Write, Bytes: nMiss * rowBytes}}},
		stage.Work{Name: in.cfg.HostDevice, Device: in.host, Ops: []device.Op{{Name: "write-back-victims", Kind: device.Write, Bytes: nVictims * rowBytes}}})
	if err != nil {
		return err
	}
	InsertedRows.Set(b, nMiss)
	WrittenBack.Set(b, nVictims)
	batch.ModeledNs.Set(b, ns)
	return nil
}

// Close removes the write-back's regions.
func (in *inserter) Close(context.Context) error { return in.low.scratch.Close() }

// check rejects a (table, row, slot) triple outside the host tables or
// Storage, before anything is written with it.
func (in *inserter) check(seq uint64, what string, i, t, row, slot int64) error {
	if !in.set.Storage.ValidSlot(int(t), slot) {
		return fmt.Errorf("batch %d: %s %d: table %d slot %d is outside Storage (%d tables × %d slots)", seq, what, i, t, slot, in.set.Storage.Len(), in.set.Storage.Capacity)
	}
	if row < 0 || row >= in.set.Tables.Rows {
		return fmt.Errorf("batch %d: %s %d: table %d row %d outside [0, %d)", seq, what, i, t, row, in.set.Tables.Rows)
	}
	return nil
}

// create builds a insert stage from its decoded config (NewFactory).
func create(_ context.Context, set stage.Settings, c *Config) (any, error) {
	ins := &inserter{set: set, cfg: c}
	var err error
	if ins.dev, err = set.Device("device", c.Device); err == nil {
		ins.host, err = set.Device("host_device", c.HostDevice)
	}
	return ins, err
}
