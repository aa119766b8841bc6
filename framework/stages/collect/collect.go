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
}

// arrays are the batch arrays collect reads and writes.
type arrays struct {
	ids, slots, victims, missIndex []int64
	hits                           []byte
	missRows, victimRows           []float32
}

func (c *collector) view(b *batch.Batch) (a arrays, err error) {
	for _, x := range []struct {
		name string
		dst  *[]int64
	}{{batch.IDs, &a.ids}, {batch.Slots, &a.slots}, {batch.Victims, &a.victims}, {batch.MissIndex, &a.missIndex}} {
		if *x.dst, err = b.Int64s(x.name); err != nil {
			return a, err
		}
	}
	if a.hits, err = b.Bytes(batch.Hits); err != nil {
		return a, err
	}
	if a.missRows, err = b.Float32s(batch.MissRows); err != nil {
		return a, err
	}
	a.victimRows, err = b.Float32s(batch.VictimRows)
	return a, err
}

func (c *collector) Process(ctx context.Context, b *batch.Batch) error {
	a, err := c.view(b)
	if err != nil {
		return err
	}
	st, tabs, l := c.set.Storage, c.set.Tables, c.set.Layout
	// Whole rows travel: values and optimizer state, Stride floats each.
	stride := int64(l.Stride)
	nVictims := b.Stats["victims"]
	if nVictims < 0 || 3*nVictims > int64(len(a.victims)) || nVictims*stride > int64(len(a.victimRows)) {
		return fmt.Errorf("batch %d: %d victims do not fit the batch's victims array; is plan upstream?", b.Seq, nVictims)
	}

	// The hazard checker first: a victim slot an earlier batch has yet to
	// fill or train (RAW 2, 3) is named as such, before the check below
	// finds it holding another row.
	if hz := c.set.Hazards; hz != nil {
		if err := hz.ReadTriples(b.Seq, string(Kind), hazard.Slot, a.victims, nVictims); err != nil {
			return err
		}
	}

	// Victims first: their Storage rows are the freshest copy, also of a
	// victim the same batch misses again.
	for _, m := range c.victimOf {
		clear(m)
	}
	for i := range nVictims {
		t, row, slot := a.victims[3*i], a.victims[3*i+1], a.victims[3*i+2]
		if !st.ValidSlot(int(t), slot) {
			return fmt.Errorf("batch %d: victim %d: table %d slot %d is outside Storage (%d tables × %d slots)", b.Seq, i, t, slot, st.Len(), st.Capacity)
		}
		if held := st.RowOf(int(t), slot); held != row {
			return fmt.Errorf("batch %d: victim %d: plan evicts row %d of table %d from slot %d, which holds row %d", b.Seq, i, row, t, slot, held)
		}
		copy(a.victimRows[i*stride:(i+1)*stride], st.Row(int(t), slot))
		c.victimOf[t][row] = i
	}

	var staged, bypassed int64
	start := l.IndexStart()
	for t := range l.Tables {
		clear(c.slotOf)
		clear(c.rowIn)
		// The plan covered the table's whole ID range, so collect does too:
		// every slot the plan promised a row must get that row.
		for p := start[t]; p < start[t+1]; p++ {
			row, slot := a.ids[p], a.slots[p]
			if slot < 0 {
				if a.hits[p] == 1 {
					return fmt.Errorf("batch %d: table %d position %d: row %d is a hit without a slot", b.Seq, t, p, row)
				}
				bypassed++
				continue
			}
			if !st.ValidSlot(t, slot) {
				return fmt.Errorf("batch %d: table %d position %d: slot %d is outside Storage's %d slots", b.Seq, t, p, slot, st.Capacity)
			}
			if row < 0 || row >= tabs.Rows {
				return fmt.Errorf("batch %d: table %d position %d: row %d outside [0, %d)", b.Seq, t, p, row, tabs.Rows)
			}
			if other, ok := c.rowIn[slot]; ok && other != row {
				return fmt.Errorf("batch %d: table %d: plan gives slot %d to rows %d and %d", b.Seq, t, slot, other, row)
			}
			c.rowIn[slot] = row
			if a.hits[p] == 1 {
				continue
			}
			if s, ok := c.slotOf[row]; ok {
				if s != slot {
					return fmt.Errorf("batch %d: table %d: plan places row %d in slots %d and %d", b.Seq, t, row, s, slot)
				}
				continue // the same missed row, already staged
			}
			c.slotOf[row] = slot
			dst := a.missRows[staged*stride : (staged+1)*stride]
			if v, ok := c.victimOf[t][row]; ok {
				copy(dst, a.victimRows[v*stride:(v+1)*stride])
			} else {
				copy(dst, tabs.Row(t, row))
			}
			idx := a.missIndex[3*staged : 3*staged+3]
			idx[0], idx[1], idx[2] = int64(t), row, slot
			staged++
		}
	}

	// A missed row an earlier batch has yet to write back (RAW 4), or
	// to train in its host table: the copy just staged is stale.
	if hz := c.set.Hazards; hz != nil {
		if err := hz.ReadTriples(b.Seq, string(Kind), hazard.HostRow, a.missIndex, staged); err != nil {
			return err
		}
	}

	rowBytes := 4 * stride
	hostNs, err := stage.Charge(ctx, b, c.cfg.Device, c.host, device.Op{Name: "gather-missed-rows", Kind: device.Read, Bytes: staged * rowBytes})
	if err != nil {
		return err
	}
	devNs, err := stage.Charge(ctx, b, c.cfg.StorageDevice, c.dev, device.Op{Name: "gather-victims", Kind: device.Read, Bytes: nVictims * rowBytes})
	if err != nil {
		return err
	}
	b.SetStat("collected_rows", staged)
	b.SetStat("collected_victims", nVictims)
	b.SetStat("bypassed", bypassed)
	b.SetStat("collect_bytes", (staged+nVictims)*rowBytes)
	// The host gathers the missed rows while the device gathers the
	// victims (ScratchPipe Sec. III-B: "concurrently").
	b.SetStat("modeled_ns", max(hostNs, devNs))
	return nil
}
