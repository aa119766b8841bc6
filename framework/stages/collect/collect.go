// Package collect is ScratchPipe's [Collect] stage: for one planned batch it
// gathers, from the host tables, the row of every ID the plan missed and
// placed in a slot, and, from Storage, the row of every victim the plan
// evicts, into the batch's miss_rows and victim_rows staging arrays. The
// exchange stage charges their trip over the link and the insert stage
// writes them where they go.
//
// Collect also checks the plan: every victim must name the row its slot
// holds in Storage, every slot must be inside Storage, and no slot may be
// given to two rows of one batch. A plan that disagrees would otherwise
// train on the wrong row without a trace. Hits are not checked against
// Storage here: in a pipelined graph the policy's Hit-Map runs ahead of
// Storage, and a hit on a row an earlier batch has yet to insert is what
// it should be; train checks that every row is in its slot when it is
// used.
//
// Pipelined, collect reads while earlier batches' insert and train write
// (ScratchPipe's RAW hazards 2–4): the plan's Hold mask keeps the slots and
// rows they write away from what collect reads. With a hazard checker,
// collect asks it before reading anything.
package collect

import (
	"context"
	"fmt"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/hazard"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/sdk/device"
)

type collector struct {
	set       stage.Settings
	cfg       *Config
	host, dev device.Device

	// Reused across batches (the runtime calls Process one batch at a
	// time), cleared per table: the slot each staged row goes to, the row
	// each slot is given.
	slotOf, rowIn map[int64]int64
	// victimOf[t] is the victim index of each evicted row of table t,
	// reused across batches.
	victimOf []map[int64]int64
	// low reads the missed rows of low-precision host tables (lowprec.go).
	low lowStaging
}

// arrays are the batch arrays collect reads and writes.
type arrays struct {
	ids, slots, victims, missIndex []int64
	hits                           []byte
	missRows, victimRows           []float32
}

func (c *collector) view(b *batch.Batch) (a arrays, err error) {
	for _, x := range []struct {
		array batch.Array[int64]
		dst   *[]int64
	}{{batch.IDs, &a.ids}, {batch.Slots, &a.slots}, {batch.Victims, &a.victims}, {batch.MissIndex, &a.missIndex}} {
		if *x.dst, err = x.array.View(b); err != nil {
			return a, err
		}
	}
	if a.hits, err = batch.Hits.View(b); err != nil {
		return a, err
	}
	if a.missRows, err = batch.MissRows.View(b); err != nil {
		return a, err
	}
	a.victimRows, err = batch.VictimRows.View(b)
	return a, err
}

func (c *collector) Process(ctx context.Context, b *batch.Batch) error {
	a, err := c.view(b)
	if err != nil {
		return err
	}
	// Whole rows travel: values and optimizer state, Stride floats each.
	stride := int64(c.set.Layout.Stride)
	nVictims, err := batch.VictimCount.Need(b, "collect")
	if err != nil {
		return err
	}
	if nVictims < 0 || 3*nVictims > int64(len(a.victims)) || nVictims*stride > int64(len(a.victimRows)) {
		return fmt.Errorf("batch %d: %d victims do not fit the batch's victims array; is plan upstream?", b.Seq, nVictims)
	}

	// The hazard checker first: a victim slot an earlier batch has yet to
	// fill or train (RAW 2, 3) is named as such, before the check below
	// finds it holding another row.
	if hz := c.set.Hazards; hz != nil {
		if err := hz.ReadTriples(b.Seq, string(hazard.Collect), hazard.Slot, a.victims, nVictims); err != nil {
			return err
		}
	}
	if err := c.readVictims(b.Seq, a, nVictims); err != nil {
		return err
	}
	staged, bypassed, err := c.stageMisses(b.Seq, a)
	if err != nil {
		return err
	}
	if err := c.readLow(ctx, b.Seq, a.missRows); err != nil {
		return err
	}

	// A missed row an earlier batch has yet to write back (RAW 4), or
	// to train in its host table: the copy just staged is stale.
	if hz := c.set.Hazards; hz != nil {
		if err := hz.ReadTriples(b.Seq, string(hazard.Collect), hazard.HostRow, a.missIndex, staged); err != nil {
			return err
		}
	}

	batch.CollectedRows.Set(b, staged)
	batch.CollectedVictims.Set(b, nVictims)
	Bypassed.Set(b, bypassed)
	CollectBytes.Set(b, (staged+nVictims)*4*stride)
	return c.charge(ctx, b, staged, nVictims)
}

// charge charges b's gathers, staged missed rows and nVictims victims:
// the host gathers the missed rows while the device gathers the victims
// (ScratchPipe Sec. III-B: "concurrently").
func (c *collector) charge(ctx context.Context, b *batch.Batch, staged, nVictims int64) error {
	rowBytes := 4 * int64(c.set.Layout.Stride)
	ns, err := stage.ChargeParallel(ctx, b,
		stage.Work{Name: c.cfg.Device, Device: c.host, Ops: []device.Op{{Name: "gather-missed-rows", Kind: device.Read, Bytes: staged * rowBytes}}},
		stage.Work{Name: c.cfg.StorageDevice, Device: c.dev, Ops: []device.Op{{Name: "gather-victims", Kind: device.Read, Bytes: nVictims * rowBytes}}})
	if err == nil {
		batch.ModeledNs.Set(b, ns)
	}
	return err
}

// readVictims copies the victims' rows out of Storage into victim_rows,
// checking each names the row its slot holds. Victims come first: their
// Storage rows are the freshest copy, also of a victim the same batch
// misses again (stageMisses takes that copy).
func (c *collector) readVictims(seq uint64, a arrays, nVictims int64) error {
	st := c.set.Storage
	stride := int64(c.set.Layout.Stride)
	for _, m := range c.victimOf {
		clear(m)
	}
	for i := range nVictims {
		t, row, slot := a.victims[3*i], a.victims[3*i+1], a.victims[3*i+2]
		if !st.ValidSlot(int(t), slot) {
			return fmt.Errorf("batch %d: victim %d: table %d slot %d is outside Storage (%d tables × %d slots)", seq, i, t, slot, st.Len(), st.Capacity)
		}
		if held := st.RowOf(int(t), slot); held != row {
			return fmt.Errorf("batch %d: victim %d: plan evicts row %d of table %d from slot %d, which holds row %d", seq, i, row, t, slot, held)
		}
		copy(a.victimRows[i*stride:(i+1)*stride], st.Row(int(t), slot))
		c.victimOf[t][row] = i
	}
	return nil
}

// stageMisses stages every missed row the plan placed in a slot, once per
// (table, row), into miss_rows and its (table, row, slot) into
// miss_index, and counts the lookups the plan left without a slot.
func (c *collector) stageMisses(seq uint64, a arrays) (staged, bypassed int64, err error) {
	start := c.set.Layout.IndexStart()
	for t := range c.set.Layout.Tables {
		clear(c.slotOf)
		clear(c.rowIn)
		// The plan covered the table's whole ID range, so collect does too:
		// every slot the plan promised a row must get that row.
		for p := start[t]; p < start[t+1]; p++ {
			stages, err := c.checkPosition(seq, a, t, p)
			switch {
			case err != nil:
				return 0, 0, err
			case a.slots[p] < 0:
				bypassed++
			case stages:
				c.stageRow(a, t, a.ids[p], a.slots[p], staged)
				staged++
			}
		}
	}
	return staged, bypassed, nil
}

// checkPosition checks the plan's decision for position p of table t and
// reports whether it is a missed row not staged yet.
func (c *collector) checkPosition(seq uint64, a arrays, t int, p int64) (bool, error) {
	st, tabs := c.set.Storage, c.set.Tables
	row, slot := a.ids[p], a.slots[p]
	if slot < 0 {
		if a.hits[p] == 1 {
			return false, fmt.Errorf("batch %d: table %d position %d: row %d is a hit without a slot", seq, t, p, row)
		}
		return false, nil
	}
	if !st.ValidSlot(t, slot) {
		return false, fmt.Errorf("batch %d: table %d position %d: slot %d is outside Storage's %d slots", seq, t, p, slot, st.Capacity)
	}
	if row < 0 || row >= tabs.Rows {
		return false, fmt.Errorf("batch %d: table %d position %d: row %d outside [0, %d)", seq, t, p, row, tabs.Rows)
	}
	if other, ok := c.rowIn[slot]; ok && other != row {
		return false, fmt.Errorf("batch %d: table %d: plan gives slot %d to rows %d and %d", seq, t, slot, other, row)
	}
	c.rowIn[slot] = row
	if a.hits[p] == 1 {
		return false, nil
	}
	if s, ok := c.slotOf[row]; ok {
		if s != slot {
			return false, fmt.Errorf("batch %d: table %d: plan places row %d in slots %d and %d", seq, t, row, s, slot)
		}
		return false, nil // the same missed row, already staged
	}
	c.slotOf[row] = slot
	return true, nil
}

// stageRow copies row of table t, bound for slot, into staging place i: from
// the victims' rows when the batch evicts it too (the freshest copy), else
// from the host table.
func (c *collector) stageRow(a arrays, t int, row, slot, i int64) {
	stride := int64(c.set.Layout.Stride)
	dst := a.missRows[i*stride : (i+1)*stride]
	switch v, ok := c.victimOf[t][row]; {
	case ok:
		copy(dst, a.victimRows[v*stride:(v+1)*stride])
	case !c.set.Tables.Direct(t):
		c.low.add(c.set.Layout.Tables, t, row, i) // readLow converts it
	default:
		c.set.Tables.ReadRow(t, row, dst)
	}
	idx := a.missIndex[3*i : 3*i+3]
	idx[0], idx[1], idx[2] = int64(t), row, slot
}

// create builds a collect stage from its decoded config (NewFactory).
func create(_ context.Context, set stage.Settings, c *Config) (any, error) {
	col := &collector{set: set, cfg: c, slotOf: map[int64]int64{}, rowIn: map[int64]int64{},
		victimOf: make([]map[int64]int64, set.Layout.Tables)}
	for t := range col.victimOf {
		col.victimOf[t] = map[int64]int64{}
	}
	var err error
	if col.host, err = set.Device("device", c.Device); err == nil {
		col.dev, err = set.Device("storage_device", c.StorageDevice)
	}
	return col, err
}
