package train

import (
	"fmt"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/region"
)

// lowPrecision reports whether some host table is stored below FP32
// (embedding.precision), so that kernels cannot work on it directly.
func (t *trainer) lowPrecision() bool {
	for tab := range t.set.Layout.Tables {
		if !t.set.Tables.Direct(tab) {
			return true
		}
	}
	return false
}

// placeHost is place for source: host when some tables are low-precision
// (mixed-precision embeddings, Sec. 3): each such table's distinct rows
// are up-converted into FP32 scratch rows (stageRows, every slot -1), the
// bags indexed into them, and, after the update, restore stores each row
// back down-converted with the batch's draws. FP32 tables train in place.
// Pooling and coalescing do not depend on a row's number, so the FP32
// arithmetic is that of the table trained in place.
func (t *trainer) placeHost(b *batch.Batch, bags kernel.Bags) (*placement, error) {
	ids, err := batch.IDs.View(b)
	if err != nil {
		return nil, err
	}
	offsets, err := batch.Offsets.View(b)
	if err != nil {
		return nil, err
	}
	B := int64(bags.Batch)
	if int64(len(offsets)) < int64(len(bags.IndexStart))*(B+1) {
		return nil, fmt.Errorf("batch %d: offsets array too short", b.Seq)
	}
	if err := t.ensureScratch(true); err != nil {
		return nil, err
	}
	pl := &placement{bags: bags, tables: t.set.Tables.Kernel(), seq: b.Seq}
	idx := region.Int64s(t.scratchIdx.Bytes())
	var none []int64
	for tab, start := range bags.IndexStart {
		off := offsets[int64(tab)*(B+1) : int64(tab+1)*(B+1)]
		lo, hi := start+off[0], start+off[B]
		if off[0] < 0 || hi < lo || hi > int64(len(ids)) {
			return nil, fmt.Errorf("batch %d: table %d: bag offsets [%d, %d) outside the batch", b.Seq, tab, off[0], off[B])
		}
		if t.set.Tables.Direct(tab) {
			copy(idx[lo:hi], ids[lo:hi])
			continue
		}
		for int64(len(none)) < hi-lo {
			none = append(none, -1)
		}
		if err := t.stageRows(b.Seq, pl, tab, ids[lo:hi], none[:hi-lo], idx[lo:hi]); err != nil {
			return nil, err
		}
	}
	pl.bags.Indices = t.scratchIdx.Ref()
	return pl, nil
}
