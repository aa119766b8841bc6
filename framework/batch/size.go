package batch

// What the regions of a graph will take, computed before any is made, for
// the resource check that refuses a graph the machine cannot hold
// (framework/resources). Each is the figure the matching type creates or
// reports at the end of a run (VirtualBytes, TouchedBytes).

// rowBytes is a row of stride float32s.
func rowBytes(stride int) int64 { return int64(stride) * 4 }

// TablesVirtualBytes is what NewTablesRows maps: every row of every table.
func TablesVirtualBytes(rows []int64, stride int) int64 {
	var n int64
	for _, r := range rows {
		n += r * rowBytes(stride)
	}
	return n
}

// TablesTouchedBytes is the most the host tables can touch when at most
// touched distinct rows of each table are looked up (every lookup of
// every batch a new row): min(rows, touched) rows per table, values and
// optimizer state, and the pages of the compact tables' index that those
// rows can touch (a page each, at most the whole index: 4 B a row). Rows
// of a compact table cost their own bytes; a low-precision table's rows
// cost at least the page they lie in, so rows spread over a large table
// can take up to 4096/row bytes times more; that excess shows as a failed
// Touch, never as a crash.
func TablesTouchedBytes(rows []int64, touched int64, stride int) int64 {
	var n int64
	for _, r := range rows {
		n += min(r, touched)*rowBytes(stride) + min(4*r, 4096*min(r, touched))
	}
	return n
}

// TablesBitmapBytes is the touched-row bitmaps NewTablesRows keeps in the
// process: a bit per row.
func TablesBitmapBytes(rows []int64) int64 {
	var n int64
	for _, r := range rows {
		n += (r + 63) / 64 * 8
	}
	return n
}

// StorageBytes is what NewStorageSlots makes: the slots' rows, in shared
// memory and all written as the cache warms, and the slot→row map it
// keeps in the process (8 B a slot).
func StorageBytes(slots []int64, stride int) (shared, process int64) {
	for _, s := range slots {
		shared += s * rowBytes(stride)
		process += s * 8
	}
	return shared, process
}

// PoolBytes is what NewPool makes for n buffers of l: all of it, since a
// batch may write every array of its layout.
func (l *Layout) PoolBytes(n int) int64 { return int64(n) * max(l.Size, 64) }
