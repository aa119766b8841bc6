package batch

import (
	"fmt"
	"math/bits"
	"os"
	"slices"
	"sync/atomic"
)

// First touch in bulk. A batch's newly touched rows of one table are
// initialised together: sorted and deduplicated, their pages are
// allocated with one MADV_POPULATE_WRITE per run of adjacent pages not
// populated before (pageSet), then the rows are written. A row whose page
// another row already populated, in this batch or an earlier one, costs
// no system call; at dim 16 (64 rows to a page) most first touches are of
// such rows. The syscall per row it replaces was 17.6 % of the default
// graph's CPU.

// pageSet records which pages of one mapping were populated. Pages of a
// region are never given back during a run, so a page once populated
// stays allocated. It is used under the table's mutex.
type pageSet struct {
	mem   []byte
	shift uint     // log2 of the page size
	bits  []uint64 // bit p: page p was populated
}

// pageShift is log2 of the system's page size.
var pageShift = uint(bits.TrailingZeros(uint(os.Getpagesize())))

// newPageSet is the page set of mem: no page populated yet.
func newPageSet(mem []byte) pageSet {
	pages := (int64(len(mem)) + 1<<pageShift - 1) >> pageShift
	return pageSet{mem: mem, shift: pageShift, bits: make([]uint64, (pages+63)/64)}
}

// has reports whether page p was populated.
func (ps *pageSet) has(p int64) bool { return ps.bits[p>>6]&(1<<(p&63)) != 0 }

// populateRows allocates the pages of rows ids (ascending, distinct) of
// rowBytes bytes each: one madvise per run of adjacent pages that were not
// populated yet. On error no page of the failing run is marked.
func (ps *pageSet) populateRows(noPopulate *atomic.Bool, ids []int64, rowBytes int64) error {
	lo, hi := int64(0), int64(0) // the pending run of pages [lo, hi)
	flush := func() error {
		if lo == hi {
			return nil
		}
		if err := populate(noPopulate, ps.mem, lo<<ps.shift, (hi-lo)<<ps.shift); err != nil {
			return err
		}
		for p := lo; p < hi; p++ {
			ps.bits[p>>6] |= 1 << (p & 63)
		}
		lo = hi
		return nil
	}
	for _, id := range ids {
		first, last := (id*rowBytes)>>ps.shift, ((id+1)*rowBytes-1)>>ps.shift
		for p := max(first, hi); p <= last; p++ {
			switch {
			case ps.has(p):
			case p == hi && lo < hi:
				hi++
			default:
				if err := flush(); err != nil {
					return err
				}
				lo, hi = p, p+1
			}
		}
	}
	return flush()
}

// populateSpan allocates the pages of mem[off:off+n] not populated yet:
// one madvise per run of them.
func (ps *pageSet) populateSpan(noPopulate *atomic.Bool, off, n int64) error {
	if n <= 0 {
		return nil
	}
	// The span as one row of n bytes at "row" 0 of a mapping shifted by
	// off is not expressible; walk its pages instead.
	first, last := off>>ps.shift, (off+n-1)>>ps.shift
	for p := first; p <= last; {
		if ps.has(p) {
			p++
			continue
		}
		q := p
		for q <= last && !ps.has(q) {
			q++
		}
		if err := populate(noPopulate, ps.mem, p<<ps.shift, (q-p)<<ps.shift); err != nil {
			return err
		}
		for r := p; r < q; r++ {
			ps.bits[r>>6] |= 1 << (r & 63)
		}
		p = q
	}
	return nil
}

// touchMany initialises the rows of ids (each in range) that no one
// touched yet, under the table's mutex: their pages first, in bulk, then
// their values.
func (t *Tables) touchMany(table int, ids []int64) error {
	vt := t.tables[table]
	vt.mu.Lock()
	defer vt.mu.Unlock()
	fresh := vt.fresh[:0]
	for _, id := range ids {
		if vt.bits[id>>6].Load()&(1<<(id&63)) == 0 {
			fresh = append(fresh, id)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	if len(fresh) > 1 {
		slices.Sort(fresh)
		fresh = slices.Compact(fresh)
	}
	vt.fresh = fresh[:0]
	if err := t.populateFresh(vt, fresh); err != nil {
		if len(fresh) == 1 {
			return fmt.Errorf("host table %d row %d: %w", table, fresh[0], err)
		}
		return fmt.Errorf("host table %d, %d new rows from row %d: %w", table, len(fresh), fresh[0], err)
	}
	s := int64(t.Stride)
	for _, id := range fresh {
		if vt.low != nil {
			t.initLow(table, id, vt.low)
		} else {
			p := id
			if vt.index != nil { // compact: the next position
				p = vt.next
				vt.next++
				vt.index[id] = int32(p + 1)
			}
			row := vt.data[p*s : (p+1)*s]
			InitRow(row[:t.Dim], t.seed, table, t.part.global(id), t.scale)
			clear(row[t.Dim:]) // optimizer state starts at zero
		}
		// The bit is set after the row is written: a goroutine that sees
		// the bit (an atomic load) sees the row.
		vt.bits[id>>6].Or(1 << (id & 63))
	}
	vt.touched.Add(int64(len(fresh)))
	return nil
}

// populateFresh allocates the pages of the rows fresh (ascending,
// distinct) in every region of the table.
func (t *Tables) populateFresh(vt *virtualTable, fresh []int64) error {
	if vt.low == nil && vt.index != nil {
		// Compact: the rows go to the next positions, one span of pages.
		if err := vt.indexPages.populateRows(&vt.noPopulate, fresh, 4); err != nil {
			return err
		}
		rb := 4 * int64(t.Stride)
		return vt.pages.populateSpan(&vt.noPopulate, vt.next*rb, int64(len(fresh))*rb)
	}
	if vt.low == nil {
		return vt.pages.populateRows(&vt.noPopulate, fresh, 4*int64(t.Stride))
	}
	if err := vt.pages.populateRows(&vt.noPopulate, fresh, int64(vt.low.rowBytes)); err != nil {
		return err
	}
	if sf := int64(t.Stride-t.Dim) * 4; sf > 0 {
		return vt.statePages.populateRows(&vt.noPopulate, fresh, sf)
	}
	return nil
}
