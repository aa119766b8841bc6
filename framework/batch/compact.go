package batch

import (
	"fmt"
	"math"

	"github.com/flowrun/flowrun/sdk/region"
)

// Compact tables: rows paid by the row. An FP32 table's touched rows are
// stored densely in its region, in the order they were first touched
// (touchMany gives a batch's new rows the next positions, in ascending
// row order), and a region of one int32 a row, the index, maps a row to
// its position plus one (0: untouched). So the touched rows cost their
// own bytes and their pages are filled one after the other, plus 4 bytes
// a row of index where rows were touched (the index is paid by the page
// too, 1024 rows to a page): at dim 16 on the default graph, 69 MB of
// touched rows took 256 MB of pages laid out by row, and take about 85 MB
// compact. Kernels find a row through the index (sdk/kernel.Table.Index;
// the SDK's views translate rows into positions), and values are a
// function of (seed, table, row), so positions change no result and no
// digest.
//
// The data region keeps its full size (rows × stride, sparse), so a
// table whose every row is touched still fits; only its written pages
// cost memory. Tables of 2³¹−1 rows or more keep the layout by row.

// makeCompact gives FP32 table i of n rows its index.
func (t *Tables) makeCompact(i int, n int64, vt *virtualTable) error {
	if n >= math.MaxInt32 {
		return nil
	}
	r, err := region.CreateIn(t.prec.Dir, fmt.Sprintf("table%d-index", i), 4*n)
	if err != nil {
		return err
	}
	vt.indexR, vt.index, vt.indexPages = r, region.Int32s(r.Bytes()), newPageSet(r.Bytes())
	return nil
}

// pos is where row id lies in data: its position in a compact table,
// id itself otherwise. The row must be touched.
func (vt *virtualTable) pos(id int64) int64 {
	if vt.index == nil {
		return id
	}
	return int64(vt.index[id]) - 1
}
