package batch

import (
	"fmt"
	"math/bits"
	"os"
	"sync"
	"sync/atomic"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/kernel/quant"
	"github.com/flowrun/flowrun/sdk/region"
)

// Precision is how the host tables store embedding values
// (embedding.precision, .rounding, .lowprec_min_rows, .storage; the
// mixed-precision paper's Sec. 3). The zero value is FP32: nothing
// changes.
//
// A low-precision table (one of at least MinRows rows, when Precision is
// not FP32) keeps its values and its optimizer state apart: the values in
// region "table<t>" at quant.RowBytes per row (INT4 two codes to a byte,
// INT2 four, plus the FP32 scale and bias; FP16 two bytes a value), or,
// Emulated, as FP32 values holding the quantize-dequantized numbers (the
// paper's CPU emulation, Sec. 4.1); the optimizer state, FP32 always (the
// paper does not say; its memory factor does not count it), in region
// "table<t>-state". Smaller tables keep the FP32 layout of the zero value.
//
// A kernel cannot read such a table directly (Direct is false and its
// Kernel() entry has no region): stages read a row with ReadRow, which
// dequantizes, and store one with WriteRow, which quantizes with the
// configured rounding. A row's initial FP32 value (InitRow) is stored at
// its first touch, so a never-updated row already holds low-precision
// values (KeepInit instead reads a never-written row as its FP32 initial
// value, the paper's emulation); stochastic draws are keyed by (seed,
// table, row, batch, element), quant.InitBatch for the first touch. At
// the end of a run the rows the cache holds are kept in FP32 (FlushRow).
// Packed and emulated tables hold the same numbers, so they end with the
// same digest.
type Precision struct {
	Precision quant.Precision
	Rounding  quant.Rounding
	// MinRows: tables with fewer rows stay FP32.
	MinRows int64
	// Emulated stores FP32 values instead of packed codes.
	Emulated bool
	// KeepInit keeps a row at its FP32 initial value until its first
	// write (embedding.quantize_init: false): such a row is not stored at
	// all, and reads as InitRow's values.
	KeepInit bool
	// Dir is where the tables' files are (embedding.tables_dir): a
	// directory on disk, the disk tier (disk.go); empty is region.Dir(),
	// shared memory. Not a precision, but how the tables are stored too.
	Dir string
}

// PrecisionOf reads the embedding keys.
func PrecisionOf(e config.Embedding) (Precision, error) {
	var p Precision
	var err error
	if e.Precision != "" {
		if p.Precision, err = quant.ParsePrecision(e.Precision); err != nil {
			return p, fmt.Errorf("embedding.precision: %w", err)
		}
	}
	if e.Rounding != "" {
		if p.Rounding, err = quant.ParseRounding(e.Rounding); err != nil {
			return p, fmt.Errorf("embedding.rounding: %w", err)
		}
	}
	p.MinRows, p.Emulated, p.KeepInit = e.LowprecMinRows, e.Storage == "emulated", !e.QuantizeInit
	p.Dir = e.TablesDir
	return p, nil
}

// of is the precision a table of rows rows is stored at.
func (p Precision) of(rows int64) quant.Precision {
	if p.Precision == quant.FP32 || rows < p.MinRows {
		return quant.FP32
	}
	return p.Precision
}

// lowTable is the storage of one low-precision table.
type lowTable struct {
	prec quant.Precision
	// values is the region's bytes: rows × rowBytes.
	values   []byte
	rowBytes int
	// state is the optimizer state, rows × stateFloats (nil without).
	state  []float32
	stateR *region.Region
	// tmp is an FP32 row for the first touch (under virtualTable.mu).
	tmp []float32
	// written has bit r set once row r was stored (Precision.KeepInit:
	// a row never stored reads as its initial value); nil otherwise.
	written []atomic.Uint64
	// flushed holds, after Storage.Flush, the FP32 rows the cache held at
	// the end of the run: the cache's copy is the model's (Sec. 3: the
	// FP32 copy is authoritative while resident), so they are not
	// down-converted.
	flushMu sync.Mutex
	// hasFlushed is set once a row is flushed: until then (every read
	// of the run before Storage.Flush) ReadRow takes no lock.
	hasFlushed atomic.Bool
	flushed    map[int64][]float32
}

// newLowTable creates table i's regions: values at the table's precision
// (FP32 values when emulated), then the state.
func (t *Tables) newLowTable(i int, n int64, p quant.Precision) (*region.Region, *lowTable, error) {
	lt := &lowTable{prec: p, rowBytes: quant.RowBytes(p, t.Dim), tmp: make([]float32, t.Dim)}
	if t.prec.KeepInit {
		lt.written = make([]atomic.Uint64, (n+63)/64)
	}
	if t.prec.Emulated {
		lt.rowBytes = 4 * t.Dim
	}
	r, err := region.CreateIn(t.prec.Dir, fmt.Sprintf("table%d", i), n*int64(lt.rowBytes))
	if err != nil {
		return nil, nil, err
	}
	lt.values = r.Bytes()
	if sf := t.Stride - t.Dim; sf > 0 {
		if lt.stateR, err = region.CreateIn(t.prec.Dir, fmt.Sprintf("table%d-state", i), n*int64(sf)*4); err != nil {
			r.Close()
			return nil, nil, err
		}
		lt.state = region.Float32s(lt.stateR.Bytes())
	}
	return r, lt, nil
}

// Low returns the tables as the convert operators take them
// (kernel.ConvertRequest): a low-precision table's values and state
// regions; an FP32 table's entry is empty and must have no rows to
// convert.
func (t *Tables) Low() []kernel.LowTable {
	out := make([]kernel.LowTable, len(t.tables))
	for i, vt := range t.tables {
		lt := vt.low
		if lt == nil {
			continue
		}
		out[i] = kernel.LowTable{Values: t.regions[i].Ref(), Rows: t.rows[i], Dim: t.Dim,
			StateFloats: t.Stride - t.Dim, Precision: lt.prec, Emulated: t.prec.Emulated}
		if lt.stateR != nil {
			out[i].State = lt.stateR.Ref()
		}
	}
	return out
}

// Rounding is the tables' rounding and the seed that keys its draws.
func (t *Tables) Rounding() (quant.Rounding, uint64) { return t.prec.Rounding, t.seed }

// Direct reports whether kernels may work on table's region as FP32 rows
// of Stride floats (Kernel): true unless the table is low-precision.
func (t *Tables) Direct(table int) bool { return t.tables[table].low == nil }

// PrecisionOf is the precision table is stored at.
func (t *Tables) PrecisionOf(table int) quant.Precision {
	if lt := t.tables[table].low; lt != nil {
		return lt.prec
	}
	return quant.FP32
}

// key is the stochastic rounding's key of a row stored by batch seq.
func (t *Tables) key(table int, row int64, seq uint64) quant.Key {
	return quant.Key{Seed: t.seed, Table: table, Row: row, Batch: seq}
}

// initLow stores row id's initial value in a low-precision table (its
// first touch, under vt.mu; its pages are allocated).
func (t *Tables) initLow(table int, id int64, lt *lowTable) {
	if lt.written != nil {
		return // read as InitRow until written; the state region is zeros
	}
	InitRow(lt.tmp, t.seed, table, id, t.scale)
	lt.store(id, lt.tmp, t.prec.Rounding, t.key(table, id, quant.InitBatch))
	if lt.state != nil {
		sf := int64(t.Stride - t.Dim)
		clear(lt.state[id*sf : (id+1)*sf])
	}
}

// store writes values (Dim floats) into row id, down-converted.
func (lt *lowTable) store(id int64, values []float32, r quant.Rounding, key quant.Key) {
	dst := lt.values[id*int64(lt.rowBytes) : (id+1)*int64(lt.rowBytes)]
	if lt.rowBytes == 4*len(values) && lt.prec != quant.FP32 { // emulated
		row := region.Float32s(dst)
		copy(row, values)
		quant.FakeQuantize(row, lt.prec, r, key)
		return
	}
	quant.QuantizeRow(dst, values, lt.prec, r, key)
}

// load reads row id's values (len(dst) floats), up-converted.
func (lt *lowTable) load(id int64, dst []float32) {
	src := lt.values[id*int64(lt.rowBytes) : (id+1)*int64(lt.rowBytes)]
	if lt.rowBytes == 4*len(dst) && lt.prec != quant.FP32 { // emulated
		copy(dst, region.Float32s(src))
		return
	}
	quant.DequantizeRow(dst, src, lt.prec)
}

// ReadRow copies row of table into dst (Stride floats: values, then the
// optimizer state), up-converting a low-precision row. A row not touched
// yet is touched first (see Row).
func (t *Tables) ReadRow(table int, row int64, dst []float32) {
	vt := t.tables[table]
	if vt.low == nil {
		copy(dst, t.Row(table, row))
		return
	}
	t.ensureTouched(table, row)
	if vt.low.flushedRow(row, dst[:t.Stride]) {
		return
	}
	if t.Fresh(table, row) {
		InitRow(dst[:t.Dim], t.seed, table, row, t.scale)
	} else {
		vt.low.load(row, dst[:t.Dim])
	}
	if vt.low.state != nil {
		sf := int64(t.Stride - t.Dim)
		copy(dst[t.Dim:t.Stride], vt.low.state[row*sf:(row+1)*sf])
	}
}

// WriteRow stores src (Stride floats) as row of table, written by batch
// seq: a low-precision row's values are down-converted with the tables'
// rounding, keyed by (seed, table, row, seq, element); its state is copied.
func (t *Tables) WriteRow(table int, row int64, src []float32, seq uint64) {
	vt := t.tables[table]
	if t.stage != nil {
		t.writeStaged(table, row, src[:t.Stride])
		return
	}
	if vt.low == nil {
		copy(t.Row(table, row), src)
		return
	}
	t.ensureTouched(table, row)
	vt.low.store(row, src[:t.Dim], t.prec.Rounding, t.key(table, row, seq))
	if vt.low.state != nil {
		sf := int64(t.Stride - t.Dim)
		copy(vt.low.state[row*sf:(row+1)*sf], src[t.Dim:t.Stride])
	}
	t.MarkWritten(table, []int64{row})
}

// Fresh reports whether row of a low-precision table still reads as its
// FP32 initial value because it was never written (Precision.KeepInit):
// the convert operators, which read the stored bytes, do not know it, so
// a caller that dequantizes rows through a kernel puts InitValues in
// their place.
func (t *Tables) Fresh(table int, row int64) bool {
	lt := t.tables[table].low
	return lt != nil && lt.written != nil && lt.written[row>>6].Load()&(1<<(row&63)) == 0
}

// InitValues writes row's initial FP32 values (Dim floats) into dst.
func (t *Tables) InitValues(table int, row int64, dst []float32) {
	InitRow(dst[:t.Dim], t.seed, table, row, t.scale)
}

// MarkWritten records that rows of a low-precision table were stored (by
// WriteRow, or by a kernel's quantize operator on the table's regions).
func (t *Tables) MarkWritten(table int, rows []int64) {
	lt := t.tables[table].low
	if lt == nil || lt.written == nil {
		return
	}
	for _, r := range rows {
		lt.written[r>>6].Or(1 << (r & 63))
	}
}

// FlushRow is the end of a run's write of a row the cache holds (Storage
// Flush): an FP32 table takes it as WriteRow does; a low-precision table
// keeps the FP32 row beside its stored one, and reads and the digest see
// it, since the cache's FP32 copy is the trained model's row.
func (t *Tables) FlushRow(table int, row int64, src []float32) {
	lt := t.tables[table].low
	if t.stage != nil {
		t.writeStaged(table, row, src[:t.Stride])
		return
	}
	if lt == nil {
		copy(t.Row(table, row), src)
		return
	}
	t.ensureTouched(table, row)
	lt.flushMu.Lock()
	defer lt.flushMu.Unlock()
	if lt.flushed == nil {
		lt.flushed = map[int64][]float32{}
	}
	lt.flushed[row] = append([]float32(nil), src[:t.Stride]...)
	lt.hasFlushed.Store(true)
}

// flushedRow copies row's flushed FP32 copy into dst, if it has one.
func (lt *lowTable) flushedRow(row int64, dst []float32) bool {
	if !lt.hasFlushed.Load() {
		return false
	}
	lt.flushMu.Lock()
	defer lt.flushMu.Unlock()
	f, ok := lt.flushed[row]
	if ok {
		copy(dst, f)
	}
	return ok
}

// ensureTouched touches a row Go code reads or writes; see Row.
func (t *Tables) ensureTouched(table int, row int64) {
	if !t.Touched(table, row) {
		if err := t.touchSlow(table, row); err != nil {
			panic(err)
		}
	}
}

// rowBytes is the bytes one row of table takes: Stride float32s, or the
// packed values plus the FP32 state.
func (t *Tables) rowBytes(table int) int64 {
	if lt := t.tables[table].low; lt != nil {
		return int64(lt.rowBytes) + 4*int64(t.Stride-t.Dim)
	}
	return 4 * int64(t.Stride)
}

// Compression is the tables' memory compression factor (Eq. 2 without a
// cache): the bytes of their embedding values over the same values in
// FP32. Optimizer state is left out, as the paper's factor leaves it out.
type Compression struct {
	// Eq3 is Eq. 2–3 over every row of every table (quant.TablesFactor).
	Eq3 float64
	// Counted is the touched rows' value bytes (packed rows, scale and
	// bias) over their FP32 bytes.
	Counted float64
	// Measured is the blocks the value regions hold over the blocks FP32
	// tables holding the same touched rows would hold. An FP32 table's
	// region counts for its values' share (Dim/Stride). The numerator is
	// measured (file blocks); the denominator, there being no FP32 copy in
	// the run, is the pages the FP32 layout's touched rows cover (from the
	// touched bitmap), so both pay the same page granularity.
	Measured float64
}

// fp32Pages is the bytes of the pages that table's touched rows would
// cover in the FP32 layout (rows of Stride float32s).
func (t *Tables) fp32Pages(table int) int64 {
	page := int64(os.Getpagesize())
	rb := 4 * int64(t.Stride)
	var n int64
	last := int64(-1)
	vt := t.tables[table]
	for wi := range vt.bits {
		w := vt.bits[wi].Load()
		for w != 0 {
			id := int64(wi)*64 + int64(bits.TrailingZeros64(w))
			w &= w - 1
			lo, hi := id*rb/page, ((id+1)*rb-1)/page
			lo = max(lo, last+1)
			if hi >= lo {
				n += hi - lo + 1
				last = hi
			}
		}
	}
	return n * page
}

// Compression measures the tables' compression; ok is false when every
// table is FP32 (nothing to report).
func (t *Tables) Compression() (c Compression, ok bool, err error) {
	precs := make([]quant.Precision, len(t.tables))
	var counted, fp32, measured, fp32Measured float64
	share := float64(t.Dim) / float64(t.Stride)
	for i, vt := range t.tables {
		precs[i] = t.PrecisionOf(i)
		ok = ok || vt.low != nil
		n := float64(vt.touched.Load())
		fp32 += n * 4 * float64(t.Dim)
		fp32Measured += float64(t.fp32Pages(i)) * share
		b, err := allocatedBytes([]*region.Region{t.regions[i]})
		if err != nil {
			return c, ok, err
		}
		if vt.low == nil {
			counted += n * 4 * float64(t.Dim)
			measured += float64(b) * share
			continue
		}
		counted += n * float64(vt.low.rowBytes)
		measured += float64(b)
	}
	// Emulated tables store FP32, so their Counted and Measured are about
	// 1; Eq3 is what packing them would give.
	c.Eq3 = quant.TablesFactor(t.rows, precs, t.Dim)
	if fp32 > 0 {
		c.Counted, c.Measured = counted/fp32, measured/fp32Measured
	}
	return c, ok, nil
}
