package batch

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"math"
	"math/bits"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/kernel/quant"
	"github.com/flowrun/flowrun/sdk/region"
)

// Tables are the host embedding tables: one region per table, rows of
// Stride float32 (Dim values, then the row's optimizer state), initialised
// from a counter-based generator keyed by (seed, table, row) so a row's
// initial value never depends on when or where it is made.
//
// The tables are virtual. Each region is a sparse file in region.Dir()
// (/dev/shm) truncated to rows×stride×4 bytes: plugins map it by name as
// any region, and its pages cost memory only once written. A row is
// initialised when it is first touched (Touch, or Row from Go code), and a
// per-table bitmap records the touched rows. So a run pays for the rows its
// batches look up, not for the table: the ScratchPipe default (8 × 10M rows
// × 128 dims, 40 GB) runs in a few GiB. Because initialisation is a pure
// function of (seed, table, row), the values do not depend on the order in
// which rows are touched, and the model digest covers the touched rows
// (with their IDs) instead of every row.
//
// Memory is paid by the row: an FP32 table is compact (compact.go), its
// touched rows stored one after the other in first-touch order with an
// index of 4 bytes a row, so touched rows cost their bytes plus the index
// pages (a table laid out by row paid a 4 KiB page per row touched at
// random, up to 4096/(4·Stride) times its bytes). Low-precision tables
// (packed.go) are still laid out by row. results.json reports both
// figures: the regions' allocated blocks and touched rows × row bytes.
//
// Why sparse tmpfs files and not the alternatives:
//   - A tmpfs file's size is not limited by the mount's size, only the
//     pages written to it are (a 40 GiB file truncates fine on a 24 GiB
//     /dev/shm), and tmpfs files are never charged to overcommit up front.
//   - memfd_create (or shared anonymous MAP_NORESERVE memory) is the same
//     shmem underneath, so it saves no memory; it would only lift the
//     mount's limit on written pages, at the price of a second way to name
//     regions (/proc/PID/fd/N, which depends on ptrace access rules and PID
//     namespaces) in sdk/region and in every plugin.
//   - A file on disk could hold more touched rows than RAM, but every
//     first write becomes page-cache writeback to disk: that is the disk
//     tier (disk.go, embedding.tables_dir), for when they do not fit.
//
// Tables may also be stored below FP32 (embedding.precision): see
// Precision in packed.go. Then a table's region holds packed rows, its
// optimizer state is a region apart, and Go code reads and writes rows
// with ReadRow and WriteRow, which convert; Row is for FP32 tables only.
//
// When the touched rows do not fit in the region directory's filesystem,
// Touch returns an error naming it instead of the process dying of SIGBUS:
// the pages of a batch's newly touched rows are allocated with
// MADV_POPULATE_WRITE, which reports the failure, before the rows are
// written (in bulk: one call per run of pages not populated before, see
// firsttouch.go).
type Tables struct {
	// Rows is the rows of the largest table (every table's, when they are
	// all the same size); RowsOf gives each table's.
	Rows int64
	// Dim is the float32 values per row.
	Dim int
	// Stride is the float32s per row: Dim, then optimizer state.
	Stride int

	seed    uint64
	scale   float32
	prec    Precision
	regions []*region.Region
	tables  []*virtualTable
	rows    []int64 // [table]: its rows
	// The disk tier's trims of its mappings (disk.go).
	trimAt    int64
	sinceTrim atomic.Int64
	trims     atomic.Int64
	// stage makes the tables a staging table over remote rows
	// (staging.go); nil for tables that own their rows.
	stage *staging
	// part makes the tables one part of row-partitioned tables
	// (NewPartTables); the zero part is the whole table.
	part Part
}

// virtualTable is one table's touch state.
type virtualTable struct {
	mu      sync.Mutex      // serialises first touches
	bits    []atomic.Uint64 // bit r: row r was initialised
	touched atomic.Int64    // rows initialised
	data    []float32       // the region, Rows×Stride
	mem     []byte          // the same, as bytes (for madvise)
	// pages are the populated pages of mem; statePages those of a
	// low-precision table's state region (firsttouch.go).
	pages, statePages pageSet
	// fresh is touchMany's buffer of new rows (under mu).
	fresh []int64
	// index makes an FP32 table compact (compact.go): row r is at
	// position index[r]-1 of data, 0 meaning untouched; next is the next
	// free position (under mu). nil: row r is at position r.
	index      []int32
	indexR     *region.Region
	indexPages pageSet
	next       int64
	// noPopulate is set when the kernel does not know
	// MADV_POPULATE_WRITE.
	noPopulate atomic.Bool
	// low is the storage of a low-precision table (packed.go); nil for
	// FP32 rows of Stride floats in data.
	low *lowTable
}

// NewTables creates n virtual host tables of rows rows, dim values and
// stride float32s per row (0 means dim: no optimizer state). Nothing is
// initialised yet: rows are, when first touched.
func NewTables(seed uint64, n int, rows int64, dim, stride int) (*Tables, error) {
	all := make([]int64, n)
	for i := range all {
		all[i] = rows
	}
	return NewTablesRows(seed, all, dim, stride)
}

// NewTablesRows creates one virtual host table per entry of rows, table t
// of rows[t] rows (Criteo's fields differ by six orders of magnitude).
// Only touched rows cost memory, so a large table that is hardly read
// costs little.
func NewTablesRows(seed uint64, rows []int64, dim, stride int) (*Tables, error) {
	return NewTablesPrecision(seed, rows, dim, stride, Precision{})
}

// NewTablesPrecision is NewTablesRows with tables stored at prec (see
// Precision); the zero Precision is FP32.
func NewTablesPrecision(seed uint64, rows []int64, dim, stride int, prec Precision) (*Tables, error) {
	if stride == 0 {
		stride = dim
	}
	var most, all int64
	for _, r := range rows {
		if r < 1 {
			return nil, fmt.Errorf("host tables: need rows ≥ 1, dim ≥ 1 and stride ≥ dim, got %d×%d stride %d", r, dim, stride)
		}
		most, all = max(most, r), all+r
	}
	if most < 1 || dim < 1 || stride < dim {
		return nil, fmt.Errorf("host tables: need rows ≥ 1, dim ≥ 1 and stride ≥ dim, got %d×%d stride %d", most, dim, stride)
	}
	t := &Tables{Rows: most, Dim: dim, Stride: stride, seed: seed, scale: float32(1 / math.Sqrt(float64(dim))),
		rows: append([]int64(nil), rows...), prec: prec, trimAt: trimEvery()}
	huge := prec.Dir == "" && hugePagesPay(all*int64(stride)*4)
	for i, n := range rows {
		if p := prec.of(n); p != quant.FP32 {
			r, lt, err := t.newLowTable(i, n, p)
			if err != nil {
				t.Close()
				return nil, fmt.Errorf("host table %d: %w", i, err)
			}
			t.regions = append(t.regions, r)
			vt := &virtualTable{bits: make([]atomic.Uint64, (n+63)/64), mem: r.Bytes(), low: lt, pages: newPageSet(r.Bytes())}
			if lt.stateR != nil {
				vt.statePages = newPageSet(lt.stateR.Bytes())
			}
			t.tables = append(t.tables, vt)
			continue
		}
		r, err := region.CreateIn(prec.Dir, fmt.Sprintf("table%d", i), n*int64(stride)*4)
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("host table %d: %w", i, err)
		}
		t.regions = append(t.regions, r)
		if huge {
			adviseHugePages(r)
		}
		vt := &virtualTable{
			bits:  make([]atomic.Uint64, (n+63)/64),
			data:  region.Float32s(r.Bytes()),
			mem:   r.Bytes(),
			pages: newPageSet(r.Bytes()),
		}
		t.tables = append(t.tables, vt)
		if err := t.makeCompact(i, n, vt); err != nil {
			t.Close()
			return nil, fmt.Errorf("host table %d: %w", i, err)
		}
	}
	return t, nil
}

// RowsOf is the rows of table t.
func (t *Tables) RowsOf(table int) int64 { return t.rows[table] }

// hugePagesPay reports whether transparent huge pages suit tables of this
// many bytes in all. A touched row costs its page: 4 KiB normally, 2 MiB
// with huge pages (and khugepaged may collapse a sparsely touched 2 MiB
// range into a full huge page), so sparse tables touched at random could
// cost up to 512 times more memory with huge pages. They are asked for
// only when the tables, fully populated, would still take at most a
// quarter of the machine's memory.
func hugePagesPay(bytes int64) bool {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return false
	}
	return bytes <= int64(si.Totalram)*int64(si.Unit)/4
}

// adviseHugePages asks for transparent huge pages on r. It is advice: the
// kernel follows it only where the file system allows huge pages (tmpfs
// with huge=advise or more), and a refusal changes speed, never results.
func adviseHugePages(r *region.Region) { _ = r.AdviseHugePages() }

// InitRow fills one row with values uniform in [-scale, scale) drawn from
// splitmix64 over (seed, table, row, column).
func InitRow(row []float32, seed uint64, table int, id int64, scale float32) {
	key := seed ^ uint64(table+1)*0x9e3779b97f4a7c15 ^ uint64(id)*0xbf58476d1ce4e5b9
	for c := range row {
		u := float32(SplitMix64(key+uint64(c))>>40) / float32(1<<24)
		row[c] = (2*u - 1) * scale
	}
}

// SplitMix64 is a counter-based generator: a good 64-bit hash of x.
func SplitMix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Kernel returns the tables as the kernel SDK describes them. A
// low-precision table (Direct false) has no Data.
func (t *Tables) Kernel() []kernel.Table {
	ks := make([]kernel.Table, len(t.regions))
	for i, r := range t.regions {
		ks[i] = kernel.Table{Data: r.Ref(), Rows: t.rows[i], Dim: t.Dim, Stride: t.Stride}
		if ir := t.tables[i].indexR; ir != nil {
			ks[i].Index = ir.Ref()
		}
		if !t.Direct(i) {
			// No region: a kernel refuses the table rather than read
			// packed bytes as floats. Stages stage such rows (ReadRow).
			ks[i].Data = region.Ref{}
		}
	}
	return ks
}

// Len is the number of tables.
func (t *Tables) Len() int { return len(t.regions) }

// Touch initialises the rows of table that ids names and no one touched
// before, and marks them touched; rows touched before keep their values
// (they may have trained). IDs outside [0, Rows) are an error, reported
// after the valid IDs are touched. It is safe for concurrent use.
//
// Every row a kernel reads or writes must have been touched: kernels work
// on the regions directly and would see an untouched row as zeros. The
// load stage touches each batch's IDs as soon as it has filled them.
func (t *Tables) Touch(table int, ids []int64) error {
	vt := t.tables[table]
	if t.stage != nil {
		return t.checkStaged(table, ids)
	}
	if t.prec.Dir != "" {
		t.noteTouched(int64(len(ids)) * max(t.rowBytes(table), 1<<pageShift))
	}
	var bad []int64
	for i, id := range ids {
		if uint64(id) >= uint64(t.rows[table]) {
			bad = append(bad[:0], id)
			continue
		}
		if vt.bits[id>>6].Load()&(1<<(id&63)) != 0 {
			continue
		}
		// A row not touched yet: the rest go in bulk (touchMany skips
		// the touched ones again, under the table's mutex).
		if err := t.touchMany(table, t.inRange(table, ids[i:], &bad)); err != nil {
			return err
		}
		break
	}
	if bad != nil {
		return fmt.Errorf("host table %d: row %d outside [0, %d)", table, bad[0], t.rows[table])
	}
	return nil
}

// inRange is ids without those outside table's rows, the last of which it
// leaves in (*bad)[0]; ids itself when all are in range.
func (t *Tables) inRange(table int, ids []int64, bad *[]int64) []int64 {
	n := uint64(t.rows[table])
	for i, id := range ids {
		if uint64(id) < n {
			continue
		}
		ok := append([]int64(nil), ids[:i]...)
		for _, id := range ids[i:] {
			if uint64(id) < n {
				ok = append(ok, id)
			} else {
				*bad = append((*bad)[:0], id)
			}
		}
		return ok
	}
	return ids
}

// TouchTables touches ids[t] in table t for every table, the tables
// concurrently: a first touch costs a page fault and the row's
// initialisation, and tables share nothing. It returns every table's
// error, joined.
func (t *Tables) TouchTables(ids [][]int64) error {
	if len(ids) > t.Len() {
		return fmt.Errorf("host tables: IDs for %d tables, there are %d", len(ids), t.Len())
	}
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	for tab, tids := range ids {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[tab] = t.Touch(tab, tids)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// touchSlow initialises row id of table unless another goroutine did since
// the caller looked.
func (t *Tables) touchSlow(table int, id int64) error {
	one := [1]int64{id}
	return t.touchMany(table, one[:])
}

// populate allocates the pages of mem[off:off+n]; noPopulate is set once
// the kernel turns out not to know MADV_POPULATE_WRITE.
func populate(noPopulate *atomic.Bool, mem []byte, off, n int64) error {
	if noPopulate.Load() {
		return nil
	}
	page := int64(os.Getpagesize())
	lo, hi := off&^(page-1), (off+n+page-1)&^(page-1)
	err := unix.Madvise(mem[lo:min(hi, int64(len(mem)))], unix.MADV_POPULATE_WRITE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EINVAL):
		noPopulate.Store(true)
		return nil
	case errors.Is(err, unix.EFAULT) || errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.ENOSPC):
		return fmt.Errorf("no memory left for a touched row in %s (the touched rows of the host tables must fit in it: %w)", region.Dir(), err)
	}
	return fmt.Errorf("allocate touched row: %w", err)
}

// Touched reports whether row id of table was initialised.
func (t *Tables) Touched(table int, id int64) bool {
	return t.tables[table].bits[id>>6].Load()&(1<<(id&63)) != 0
}

// TouchedRows is the number of rows initialised in table.
func (t *Tables) TouchedRows(table int) int64 { return t.tables[table].touched.Load() }

// TouchedBytes is the bytes of every touched row of every table (values
// and optimizer state): what the tables would cost if a touched row took
// no more than its own bytes.
func (t *Tables) TouchedBytes() int64 {
	var n int64
	for i := range t.tables {
		n += t.TouchedRows(i) * t.rowBytes(i)
	}
	return n
}

// VirtualBytes is the size of every table, touched or not.
func (t *Tables) VirtualBytes() int64 {
	var n int64
	for i, r := range t.rows {
		n += r * t.rowBytes(i)
	}
	return n
}

// AllocatedBytes is the memory the tables' regions hold, measured as the
// blocks their files occupy (pages are allocated on first write and
// never given back during a run, so this is also their peak).
func (t *Tables) AllocatedBytes() (int64, error) { return allocatedBytes(t.allRegions()) }

// allRegions is the tables' regions, with the state regions of the
// low-precision tables.
func (t *Tables) allRegions() []*region.Region {
	rs := append([]*region.Region(nil), t.regions...)
	for _, vt := range t.tables {
		if vt.low != nil && vt.low.stateR != nil {
			rs = append(rs, vt.low.stateR)
		}
		if vt.indexR != nil {
			rs = append(rs, vt.indexR)
		}
	}
	return rs
}

func allocatedBytes(rs []*region.Region) (int64, error) {
	var n int64
	for _, r := range rs {
		var st unix.Stat_t
		if err := unix.Stat(r.File(), &st); err != nil {
			return n, fmt.Errorf("region %s: %w", r.Name(), err)
		}
		n += st.Blocks * 512
	}
	return n, nil
}

// Row returns one row of one table, its Stride floats: Dim values then the
// optimizer state. The row is shared memory, so writes are visible to every
// plugin. A row not touched yet is touched first, so Go code never sees an
// uninitialised row; it panics if the row cannot be allocated (Touch
// reports that as an error, and every row a batch names was touched when
// the batch was loaded).
func (t *Tables) Row(table int, row int64) []float32 {
	if t.tables[table].low != nil {
		panic(fmt.Sprintf("host table %d is stored at %v: read it with ReadRow, write it with WriteRow", table, t.tables[table].low.prec))
	}
	if !t.Touched(table, row) {
		if t.stage != nil {
			panic(fmt.Errorf("host table %d row %d: %w", table, row, errNotStaged))
		}
		if err := t.touchSlow(table, row); err != nil {
			panic(err)
		}
	}
	s, p := int64(t.Stride), t.tables[table].pos(row)
	return t.tables[table].data[p*s : (p+1)*s]
}

// Hash writes the tables into h, the embedding half of the model digest:
// table after table, the number of touched rows (int64), then every
// touched row in ascending order as its ID (int64) followed by its Stride
// float32s (values and optimizer state). Rows never touched hold their
// initial values by definition and are left out, so the digest costs the
// touched rows, not the table. Numbers are little-endian; regions hold
// native float32 and flowrun supports little-endian hosts only (amd64,
// arm64), so row bytes are already canonical.
func (t *Tables) Hash(h hash.Hash) {
	rowBytes := 4 * t.Stride
	buf := make([]byte, 0, 1<<16)
	flush := func(room int) {
		if len(buf)+room > cap(buf) {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	var tmp []float32
	for tab, vt := range t.tables {
		if vt.low != nil && tmp == nil {
			tmp = make([]float32, t.Stride)
		}
		flush(8)
		buf = binary.LittleEndian.AppendUint64(buf, uint64(vt.touched.Load()))
		for wi := range vt.bits {
			w := vt.bits[wi].Load()
			for w != 0 {
				id := int64(wi)*64 + int64(bits.TrailingZeros64(w))
				w &= w - 1
				flush(8 + rowBytes)
				buf = binary.LittleEndian.AppendUint64(buf, uint64(id))
				var row []float32
				if vt.low != nil {
					// The up-converted row: what an emulated table holds.
					t.ReadRow(tab, id, tmp)
					row = tmp
				} else {
					p := vt.pos(id)
					row = vt.data[p*int64(t.Stride) : (p+1)*int64(t.Stride)]
				}
				buf = append(buf, unsafe.Slice((*byte)(unsafe.Pointer(&row[0])), rowBytes)...)
			}
		}
	}
	h.Write(buf)
}

// Digest is sha256 over the tables (Hash) followed by the dense model's
// digest.
func (t *Tables) Digest(dense []byte) string {
	h := sha256.New()
	t.Hash(h)
	h.Write(dense)
	return fmt.Sprintf("%x", h.Sum(nil))
}

// Close removes the tables.
func (t *Tables) Close() error {
	var errs []error
	for _, r := range t.allRegions() {
		errs = append(errs, r.Close())
	}
	t.regions, t.tables = nil, nil
	return errors.Join(errs...)
}

// RowStride is the float32s of a row trained with e's optimizer: dim
// values, then the optimizer's state (sdk/kernel.StateFloats).
func RowStride(e config.Embedding, dim int) (kernel.Optimizer, int, error) {
	opt, err := kernel.ParseOptimizer(e.Optimizer)
	if err != nil {
		return 0, 0, fmt.Errorf("embedding.optimizer: %w", err)
	}
	return opt, dim + kernel.StateFloats(opt, dim), nil
}
