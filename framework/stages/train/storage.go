package train

import (
	"fmt"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/kernel"
)

// slotBags turns a batch's bags over host rows into the same bags over
// Storage slots. The plan wrote one slot per ID into the slots array, laid
// out exactly like the IDs, so the slots array itself is the slot-indexed
// copy of the indices: same offsets, same index starts, nothing to build.
//
// The cpu kernel coalesces a row's gradients in lookup-position order
// whatever number the row goes by, so training a row in its slot gives the
// same bits as training it in its host table; that is what lets a cached
// run end with the no-cache run's digest.
//
// Every looked-up ID must have a slot: a bypassed row (slot -1) lives only
// in the host table, and a batch cannot train half in Storage and half on
// the host without giving up that equality.
func (t *trainer) slotBags(b *batch.Batch, bags kernel.Bags) (kernel.Bags, error) {
	if t.set.Storage == nil {
		return bags, fmt.Errorf("batch %d: source %s, but the run has no Storage", b.Seq, SourceStorage)
	}
	slots, err := b.Int64s(batch.Slots)
	if err != nil {
		return bags, err
	}
	ids, err := b.Int64s(batch.IDs)
	if err != nil {
		return bags, err
	}
	offsets, err := b.Int64s(batch.Offsets)
	if err != nil {
		return bags, err
	}
	B := int64(bags.Batch)
	if int64(len(offsets)) < int64(len(bags.IndexStart))*(B+1) {
		return bags, fmt.Errorf("batch %d: offsets array too short", b.Seq)
	}
	for tab, start := range bags.IndexStart {
		off := offsets[int64(tab)*(B+1) : int64(tab+1)*(B+1)]
		if off[0] < 0 || off[B] < off[0] || start+off[B] > int64(len(slots)) {
			return bags, fmt.Errorf("batch %d: table %d: bag offsets [%d, %d) outside the batch", b.Seq, tab, off[0], off[B])
		}
		for p := start + off[0]; p < start+off[B]; p++ {
			if s := slots[p]; s < 0 || s >= t.set.Storage.Capacity {
				return bags, fmt.Errorf("batch %d: table %d: row %d (lookup %d) has no Storage slot (slot %d): the cache could not hold every distinct ID of the batch; raise cache.size to at least the batch's distinct IDs per table",
					b.Seq, tab, ids[p], p-start, s)
			}
		}
	}
	bags.Indices, err = b.Ref(batch.Slots)
	return bags, err
}

// onDevice places a batch's embedding operations on the compute device:
// with the rows in Storage, gather-reduce and scatter run where the dense
// model runs, and neither pooled embeddings nor their gradients cross the
// link.
func onDevice(embedding, compute []device.Op) []device.Op {
	var ops []device.Op
	for _, op := range compute {
		if op.Kind != device.Transfer {
			ops = append(ops, op)
		}
	}
	return append(embedding, ops...)
}
