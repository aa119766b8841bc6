package batch

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The disk tier (embedding.tables_dir, Precision.Dir): the tables' files
// are created in a directory on disk instead of /dev/shm, each reached
// through a link of its region name in /dev/shm so that plugins map it by
// name as any region. Nothing else changes: rows are initialised at first
// touch and read and written in place through the mapping, so a run ends
// with the digest it has in shared memory.
//
// The DRAM above the disk is the OS page cache, not a row cache of
// flowrun's own: a touched page is written back by the kernel's
// writeback and dropped under memory pressure, then read back on the next
// access, so the touched rows may exceed memory (up to the disk's free
// space) while the rows in use stay in DRAM. The page cache caches by the
// 4 KiB page, like the tables' first touch; a row cache would cache by
// the row, at the price of a copy per access and a second store in every
// kernel's gather path. Measured and modeled figures: docs/benchmarks.md,
// "Disk tier"; the drive's modeled cost profile is the nvme-ssd device.

// A process's resident set counts the file pages it has mapped, so the
// page cache above the disk tier would show in flowrun's RSS up to all of
// memory. The tier unmaps the resident pages of all its regions (madvise
// MADV_DONTNEED: for a shared file mapping the data stays in the file and
// the page cache, a dirty page is written back as usual, and the next
// access faults the page in again, from the page cache while it holds it)
// every trimEvery bytes of pages its lookups may have mapped: every row a
// batch looks up (touched before or not) counted as a page, since rows
// read at random each map one. Counting only newly touched rows is not
// enough: at the paper's configuration a 200-batch run with that rule
// still mapped 21 GiB (docs/benchmarks.md, "Disk tier").

// trimEvery is the bytes of newly touched rows between two trims: an
// eighth of physical memory, at least 256 MiB.
func trimEvery() int64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 1 << 30
	}
	return max(int64(si.Totalram)*int64(si.Unit)/8, 256<<20)
}

// noteTouched counts n bytes of pages that lookups may have mapped and,
// for tables on disk, trims their mappings once trimEvery bytes were
// counted since the last trim.
func (t *Tables) noteTouched(n int64) {
	if t.prec.Dir == "" || t.sinceTrim.Add(n) < t.trimAt {
		return
	}
	t.sinceTrim.Store(0)
	for _, r := range t.allRegions() {
		// Advice: a failure leaves the pages mapped, which changes
		// memory, never values.
		_ = unix.Madvise(r.Bytes(), unix.MADV_DONTNEED)
	}
	t.trims.Add(1)
}

// Where is where the tables' pages are allocated, for the memory lines
// of a run's summary.
func (t *Tables) Where() string {
	if t.prec.Dir == "" {
		return "allocated shared memory"
	}
	return fmt.Sprintf("allocated on disk in %s", t.prec.Dir)
}

// ResidentBytes is, for tables on disk, the bytes of their pages in the
// page cache now (mincore): the DRAM the disk tier uses. ok is false for
// tables in shared memory, whose pages are all resident
// (AllocatedBytes), or where mincore fails.
func (t *Tables) ResidentBytes() (n int64, ok bool) {
	if t.prec.Dir == "" {
		return 0, false
	}
	page := int64(1) << pageShift
	var vec []byte
	for _, r := range t.allRegions() {
		mem := r.Bytes()
		pages := (int64(len(mem)) + page - 1) / page
		if int64(cap(vec)) < pages {
			vec = make([]byte, pages)
		}
		vec = vec[:pages]
		if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
			return 0, false
		}
		for _, v := range vec {
			n += int64(v & 1)
		}
	}
	return n * page, true
}
