package score

import (
	"errors"
	"fmt"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/region"
)

// staging is how score reads tables stored below FP32 (embedding.precision):
// such a table has no FP32 region for the kernel to pool from, so each
// batch's distinct rows of it are read up-converted (batch.Tables.ReadRow,
// the same values train reads) into rows of the stage's own, and the
// lookups are renumbered to them in a copy of the candidates' index array
// (the candidates' own ids stay the host rows, for the device's row keys).
// An FP32 table is pooled in place, as without staging.
type staging struct {
	idx  *region.Region // one int64 per lookup of a batch
	rows *region.Region // per table, room for every lookup a distinct row
	per  int64          // lookups per table of a full batch (IDsPerTable)
	at   map[int64]int64
}

// newStaging makes the (sparse) regions for l's batches.
func newStaging(name string, l *batch.Layout) (*staging, error) {
	per := int64(l.IDsPerTable)
	n := int64(l.Tables) * per
	// The index array is the candidates' (subset.ids), copied.
	idx, err := region.Create("score-staged-ids-"+name, max(8*int64(l.Tables)*int64(l.BatchSize)*int64(l.Lookups), 64))
	if err != nil {
		return nil, fmt.Errorf("staging: %w", err)
	}
	rows, err := region.Create("score-staged-rows-"+name, max(4*n*int64(l.Stride), 64))
	if err != nil {
		idx.Close()
		return nil, fmt.Errorf("staging: %w", err)
	}
	return &staging{idx: idx, rows: rows, per: per, at: map[int64]int64{}}, nil
}

// stage copies the lookups ids (tables laid out from start, m bags each
// with offsets offs, T×(m+1)) into the staged index array, renumbering each
// low-precision table's to its distinct rows, which it reads into the
// staged rows. It returns the kernel tables and index array to pool from.
func (st *staging) stage(tables *batch.Tables, ids, offs, start []int64, m int) ([]kernel.Table, region.Ref) {
	kt := tables.Kernel()
	idx := region.Int64s(st.idx.Bytes())
	rows := region.Float32s(st.rows.Bytes())
	stride := int64(tables.Stride)
	if T := len(kt); T > 0 {
		end := start[T-1] + offs[(T-1)*(m+1)+m]
		copy(idx[:end], ids[:end])
	}
	for t := range kt {
		if tables.Direct(t) {
			continue
		}
		lo, hi := start[t], start[t]+offs[t*(m+1)+m]
		base := int64(t) * st.per * stride
		clear(st.at)
		for p := lo; p < hi; p++ {
			row := ids[p]
			i, ok := st.at[row]
			if !ok {
				i = int64(len(st.at))
				st.at[row] = i
				tables.ReadRow(t, row, rows[base+i*stride:base+(i+1)*stride])
			}
			idx[p] = i
		}
		n := int64(len(st.at))
		kt[t].Data = st.rows.Ref().Sub(4*base, 4*max(n, 1)*stride)
		kt[t].Rows, kt[t].Index = n, region.Ref{}
	}
	return kt, st.idx.Ref()
}

func (st *staging) close() error {
	return errors.Join(st.idx.Close(), st.rows.Close())
}
