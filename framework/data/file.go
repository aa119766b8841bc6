package data

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"strings"
	"sync"

	"github.com/flowrun/flowrun/framework/config"
)

// A batch file (.frb) holds samples in fixed-size records after a header,
// so the load stage reads any batch by its sequence number with one read
// at a computed offset: deterministic, and free to run ahead. All numbers
// are little-endian.
//
//	offset     size  field
//	0          8     magic "FLOWRUNB"
//	8          4     version (2; 1 is still read)
//	12         4     header length H = the offset of the first record (a multiple of 64)
//	16         4     tables T
//	20         4     lookups per sample per table L
//	24         4     dense features D
//	28         4     bytes per ID: 4 or 8
//	32         8     samples N
//	40         8     seed (synthetic data; 0 otherwise)
//	48         16    source: synthetic, criteo or movielens (NUL-padded)
//	64         8·T   rows of each table
//	64+8T      4     CRC-32 (IEEE) of bytes [0, 64+8T)
//	…          …     zeros up to H
//	H + i·R    R     sample i: label float32, D dense float32, T·L IDs (table-major),
//	                 CRC-32C of i (uint64) and the record's bytes before it
//
// R = 4 + 4·D + idBytes·T·L + 4, and the file is exactly H + N·R bytes
// long. The header's padding is zeros. Every byte is therefore checked on
// read: the header's by its checksum and padding, a record's by its own
// checksum, which also covers its index, so a record copied to another
// place is found too. Version 1 files (records without a checksum) are
// still read, unchecked: re-convert them to have their records checked.

// Magic opens every batch file.
const Magic = "FLOWRUNB"

// FileVersion is the format version this package writes. It also reads
// version 1, whose records carry no checksum.
const FileVersion = 2

// castagnoli is the CRC-32C table of record checksums (hardware-assisted
// on amd64 and arm64, so checking costs little beside the read).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// recordSum is the checksum of record i with the bytes b (the record
// without its checksum).
func recordSum(i uint64, b []byte) uint32 {
	var idx [8]byte
	binary.LittleEndian.PutUint64(idx[:], i)
	return crc32.Update(crc32.Checksum(idx[:], castagnoli), castagnoli, b)
}

// Limits on a header's counts: far above any real dataset, low enough that
// a corrupt header cannot make a reader allocate without bound.
const (
	maxFileTables  = 1 << 16
	maxFileLookups = 1 << 16
	maxFileDense   = 1 << 16
)

// ErrNotBatchFile is wrapped by the error of opening a file that is not a
// batch file (wrong magic).
var ErrNotBatchFile = errors.New("not a flowrun batch file")

// Header describes a batch file.
type Header struct {
	// Source is what the samples came from: synthetic, criteo or movielens.
	Source string
	// Seed is the seed synthetic samples were drawn with (0 otherwise).
	Seed uint64
	// Tables, Lookups and Dense are the shape of a sample: Lookups IDs in
	// each of Tables tables, and Dense dense features.
	Tables, Lookups, Dense int
	// Rows are the rows of each table: every ID of table t is below Rows[t].
	Rows []int64
	// Samples is the number of samples; Writer fills it in.
	Samples uint64
	// Version is the file's format version: FileVersion for what Create
	// writes, 1 for an older file (records without a checksum).
	Version int
}

// summed reports whether the file's records carry a checksum.
func (h *Header) summed() bool { return h.Version >= 2 }

// MaxRows is the largest of Rows (0 without tables).
func (h *Header) MaxRows() int64 {
	var m int64
	for _, r := range h.Rows {
		m = max(m, r)
	}
	return m
}

func (h *Header) idBytes() int {
	if h.MaxRows() <= math.MaxUint32+1 {
		return 4
	}
	return 8
}

// RecordSize is the bytes of one sample, its checksum included.
func (h *Header) RecordSize() int {
	n := 4 + 4*h.Dense + h.idBytes()*h.Tables*h.Lookups
	if h.summed() {
		n += 4
	}
	return n
}

func (h *Header) headerLen() int { return (64 + 8*h.Tables + 4 + 63) &^ 63 }

func (h *Header) check() error {
	switch {
	case h.Tables < 1 || h.Tables > maxFileTables:
		return fmt.Errorf("tables %d is not in [1, %d]", h.Tables, maxFileTables)
	case h.Lookups < 1 || h.Lookups > maxFileLookups:
		return fmt.Errorf("lookups %d is not in [1, %d]", h.Lookups, maxFileLookups)
	case h.Dense < 0 || h.Dense > maxFileDense:
		return fmt.Errorf("dense features %d is not in [0, %d]", h.Dense, maxFileDense)
	case len(h.Rows) != h.Tables:
		return fmt.Errorf("%d row counts for %d tables", len(h.Rows), h.Tables)
	case len(h.Source) > 16:
		return fmt.Errorf("source %q is longer than 16 bytes", h.Source)
	}
	for t, r := range h.Rows {
		if r < 1 {
			return fmt.Errorf("table %d has %d rows, want ≥ 1", t, r)
		}
	}
	return nil
}

func (h *Header) marshal() []byte {
	n := h.headerLen()
	b := make([]byte, n)
	le := binary.LittleEndian
	copy(b, Magic)
	le.PutUint32(b[8:], uint32(h.Version))
	le.PutUint32(b[12:], uint32(n))
	le.PutUint32(b[16:], uint32(h.Tables))
	le.PutUint32(b[20:], uint32(h.Lookups))
	le.PutUint32(b[24:], uint32(h.Dense))
	le.PutUint32(b[28:], uint32(h.idBytes()))
	le.PutUint64(b[32:], h.Samples)
	le.PutUint64(b[40:], h.Seed)
	copy(b[48:64], h.Source)
	for t, r := range h.Rows {
		le.PutUint64(b[64+8*t:], uint64(r))
	}
	end := 64 + 8*h.Tables
	le.PutUint32(b[end:], crc32.ChecksumIEEE(b[:end]))
	return b
}

// readHeader reads and checks a header; errors name the byte offset of
// the field that is wrong.
func readHeader(r io.ReaderAt) (*Header, int64, error) {
	fixed := make([]byte, 64)
	if n, err := r.ReadAt(fixed, 0); n < len(fixed) {
		if n >= len(Magic) && string(fixed[:len(Magic)]) != Magic {
			return nil, 0, fmt.Errorf("offset 0: %w (magic %q, want %q)", ErrNotBatchFile, fixed[:len(Magic)], Magic)
		}
		return nil, 0, fmt.Errorf("offset %d: header truncated (%d of 64 bytes): %v", n, n, errOrEOF(err))
	}
	if string(fixed[:len(Magic)]) != Magic {
		return nil, 0, fmt.Errorf("offset 0: %w (magic %q, want %q)", ErrNotBatchFile, fixed[:len(Magic)], Magic)
	}
	le := binary.LittleEndian
	v := le.Uint32(fixed[8:])
	if v != 1 && v != FileVersion {
		return nil, 0, fmt.Errorf("offset 8: version %d, this flowrun reads versions 1 and %d (re-convert the data with this flowrun)", v, FileVersion)
	}
	h := &Header{
		Version: int(v),
		Tables:  int(le.Uint32(fixed[16:])),
		Lookups: int(le.Uint32(fixed[20:])),
		Dense:   int(le.Uint32(fixed[24:])),
		Samples: le.Uint64(fixed[32:]),
		Seed:    le.Uint64(fixed[40:]),
		Source:  strings.TrimRight(string(fixed[48:64]), "\x00"),
	}
	if h.Tables < 1 || h.Tables > maxFileTables {
		return nil, 0, fmt.Errorf("offset 16: tables %d is not in [1, %d]", h.Tables, maxFileTables)
	}
	hlen := int64(le.Uint32(fixed[12:]))
	end := 64 + 8*int64(h.Tables)
	if want := int64(h.headerLen()); hlen != want {
		return nil, 0, fmt.Errorf("offset 12: header length %d, want %d for %d tables", hlen, want, h.Tables)
	}
	rest := make([]byte, hlen-64)
	if n, err := r.ReadAt(rest, 64); n < len(rest) {
		return nil, 0, fmt.Errorf("offset %d: header truncated: %v", 64+int64(n), errOrEOF(err))
	}
	all := append(fixed, rest...)
	if got, want := le.Uint32(all[end:]), crc32.ChecksumIEEE(all[:end]); got != want {
		return nil, 0, fmt.Errorf("offset %d: header checksum %08x, want %08x (the header is corrupt)", end, got, want)
	}
	for i := end + 4; i < hlen; i++ {
		if all[i] != 0 {
			return nil, 0, fmt.Errorf("offset %d: header padding byte %#02x, want 0 (the header is corrupt)", i, all[i])
		}
	}
	h.Rows = make([]int64, h.Tables)
	for t := range h.Rows {
		v := le.Uint64(all[64+8*t:])
		if v < 1 || v > math.MaxInt64 {
			return nil, 0, fmt.Errorf("offset %d: table %d has %d rows", 64+8*t, t, v)
		}
		h.Rows[t] = int64(v)
	}
	if err := h.check(); err != nil {
		return nil, 0, fmt.Errorf("offset 16: %w", err)
	}
	if ib := int(le.Uint32(fixed[28:])); ib != h.idBytes() {
		return nil, 0, fmt.Errorf("offset 28: %d bytes per ID, want %d for tables of up to %d rows", ib, h.idBytes(), h.MaxRows())
	}
	return h, hlen, nil
}

func errOrEOF(err error) error {
	if err == nil {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Writer writes a batch file. It writes to PATH.tmp and renames it to
// PATH on Close, so a conversion that fails leaves no half-written file
// under the name a graph reads.
type Writer struct {
	h     Header
	path  string
	f     *os.File
	w     *bufio.Writer
	rec   []byte
	le    binary.ByteOrder
	idB   int
	wrote uint64
	err   error
	maxID []int64 // [table]: the largest ID appended, -1 before any
}

// Create starts a batch file at path with h's shape (h.Samples is
// ignored: Close records how many samples were appended).
func Create(path string, h Header) (*Writer, error) {
	if err := h.check(); err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	h.Rows = append([]int64(nil), h.Rows...)
	h.Version = FileVersion
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return nil, err
	}
	w := &Writer{h: h, path: path, f: f, w: bufio.NewWriterSize(f, 1<<20), rec: make([]byte, h.RecordSize()),
		le: binary.LittleEndian, idB: h.idBytes(), maxID: make([]int64, h.Tables)}
	for t := range w.maxID {
		w.maxID[t] = -1
	}
	if _, err := w.w.Write(h.marshal()); err != nil {
		w.Abort()
		return nil, err
	}
	return w, nil
}

// Append writes one sample: its label (0 or 1), its dense features and
// its IDs, table-major (ids[t·Lookups+j] is the j-th ID of table t).
func (w *Writer) Append(label float32, dense []float32, ids []int64) error {
	if w.err != nil {
		return w.err
	}
	h := &w.h
	if len(dense) != h.Dense || len(ids) != h.Tables*h.Lookups {
		return fmt.Errorf("%s: sample %d has %d dense features and %d IDs, want %d and %d",
			w.path, w.wrote, len(dense), len(ids), h.Dense, h.Tables*h.Lookups)
	}
	if !(label >= 0 && label <= 1) {
		return fmt.Errorf("%s: sample %d: label %g is not in [0, 1]", w.path, w.wrote, label)
	}
	b := w.rec
	w.le.PutUint32(b, math.Float32bits(label))
	for i, x := range dense {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("%s: sample %d: dense feature %d is %g", w.path, w.wrote, i, x)
		}
		w.le.PutUint32(b[4+4*i:], math.Float32bits(x))
	}
	p := 4 + 4*h.Dense
	for i, id := range ids {
		t := i / h.Lookups
		if id < 0 || id >= h.Rows[t] {
			return fmt.Errorf("%s: sample %d: table %d ID %d is not in [0, %d)", w.path, w.wrote, t, id, h.Rows[t])
		}
		w.maxID[t] = max(w.maxID[t], id)
		if w.idB == 4 {
			w.le.PutUint32(b[p:], uint32(id))
		} else {
			w.le.PutUint64(b[p:], uint64(id))
		}
		p += w.idB
	}
	w.le.PutUint32(b[p:], recordSum(w.wrote, b[:p]))
	if _, err := w.w.Write(b); err != nil {
		w.err = err
		return err
	}
	w.wrote++
	return nil
}

// SetRows replaces the header's row counts before Close, for a writer
// that learns them only at the end (a categorified conversion numbers each
// field's values as it meets them). Each must hold every ID appended to
// its table and be at most what Create was given, in IDs of the same width.
func (w *Writer) SetRows(rows []int64) error {
	if len(rows) != w.h.Tables {
		return fmt.Errorf("%s: %d row counts for %d tables", w.path, len(rows), w.h.Tables)
	}
	h := w.h
	h.Rows = append([]int64(nil), rows...)
	for t, r := range rows {
		if r <= w.maxID[t] || r < 1 || r > w.h.Rows[t] {
			return fmt.Errorf("%s: table %d: %d rows do not hold ID %d or exceed the %d it was created with", w.path, t, r, w.maxID[t], w.h.Rows[t])
		}
	}
	if h.idBytes() != w.idB {
		return fmt.Errorf("%s: %d rows change the IDs' width", w.path, h.MaxRows())
	}
	w.h.Rows = h.Rows
	return nil
}

// Samples is how many samples have been appended.
func (w *Writer) Samples() uint64 { return w.wrote }

// Close records the sample count in the header, syncs the file and gives
// it its name.
func (w *Writer) Close() error {
	if w.err != nil {
		w.Abort()
		return w.err
	}
	w.h.Samples = w.wrote
	err := w.w.Flush()
	if err == nil {
		_, err = w.f.WriteAt(w.h.marshal(), 0)
	}
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(w.path+".tmp", w.path)
	}
	if err != nil {
		os.Remove(w.path + ".tmp")
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	return nil
}

// Abort discards the file.
func (w *Writer) Abort() {
	w.f.Close()
	os.Remove(w.path + ".tmp")
	if w.err == nil {
		w.err = errors.New("writer aborted")
	}
}

// File reads a batch file as the batches of a dataset. Training batch b
// is samples [b·B, (b+1)·B) of the file, going around the training part
// again (another epoch) when the run asks for more batches than it holds;
// the held-out batches are the last eval_batches·B samples, never trained
// on. A file that flowrun gen wrote for a graph therefore gives that
// graph's run exactly the batches its synthetic dataset would.
type File struct {
	path   string
	f      *os.File
	h      *Header
	d      config.Dataset
	data   int64 // offset of the first record
	rec    int64 // record size
	nTrain uint64
	bufs   sync.Pool
}

// Open opens a batch file for a dataset and checks that they agree: the
// same tables, lookups and dense features, table rows within
// dataset.rows, and enough samples for the held-out batches and at least
// one training batch. Every disagreement is reported at once, each at the
// dataset key to change.
func Open(path string, d config.Dataset) (*File, error) {
	h, f, hlen, err := openHeader(path)
	if err != nil {
		return nil, err
	}
	var errs []error
	mismatch := func(key string, file, graph int64, what string) {
		errs = append(errs, config.At(key, fmt.Errorf("the file %s has %d %s, the graph %d", path, file, what, graph)))
	}
	if d.Tables != h.Tables {
		mismatch("tables", int64(h.Tables), int64(d.Tables), "tables")
	}
	if d.Lookups != h.Lookups {
		mismatch("lookups", int64(h.Lookups), int64(d.Lookups), "lookups per sample per table")
	}
	if d.DenseFeatures != h.Dense {
		mismatch("dense_features", int64(h.Dense), int64(d.DenseFeatures), "dense features")
	}
	switch {
	case len(d.TableRows) == 0 && d.Locality != config.CriteoKaggle:
		if m := h.MaxRows(); d.Rows < m {
			errs = append(errs, config.At("rows", fmt.Errorf("the file %s has tables of up to %d rows, more than the graph's %d", path, m, d.Rows)))
		}
	case len(h.Rows) == d.Tables:
		for t, r := range h.Rows {
			if want := d.RowsOf(t); want < r {
				errs = append(errs, config.At("table_rows", fmt.Errorf("the file %s has %d rows in table %d, more than the graph's %d", path, r, t, want)))
			}
		}
	}
	eval := uint64(d.EvalBatches) * uint64(d.BatchSize)
	var nTrain uint64
	if d.BatchSize >= 1 && h.Samples >= eval {
		nTrain = (h.Samples - eval) / uint64(d.BatchSize)
	}
	if d.BatchSize >= 1 && nTrain < 1 {
		errs = append(errs, config.At("eval_batches", fmt.Errorf("%s has %d samples: not enough for %d held-out batches and one training batch of %d (lower batch_size or eval_batches)",
			path, h.Samples, d.EvalBatches, d.BatchSize)))
	}
	if len(errs) > 0 {
		f.Close()
		return nil, config.At("dataset", errors.Join(errs...))
	}
	fl := &File{path: path, f: f, h: h, d: d, data: hlen, rec: int64(h.RecordSize()), nTrain: nTrain}
	fl.bufs.New = func() any { b := make([]byte, int64(d.BatchSize)*fl.rec); return &b }
	return fl, nil
}

// Epochs says how a run of d.Batches training batches uses the batch file
// at d.Path: the training batches the file holds and the passes over them
// the run makes (above 1, the file's training part repeats, see File).
func Epochs(d config.Dataset) (fileBatches uint64, epochs float64, err error) {
	fl, err := Open(d.Path, d)
	if err != nil {
		return 0, 0, err
	}
	defer fl.Close()
	n := fl.TrainBatches()
	return n, float64(d.Batches) / float64(n), nil
}

// ReadHeader reads a batch file's header and checks its length.
func ReadHeader(path string) (*Header, error) {
	h, f, _, err := openHeader(path)
	if err != nil {
		return nil, err
	}
	f.Close()
	return h, nil
}

func openHeader(path string) (*Header, *os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, 0, err
	}
	h, hlen, err := readHeader(f)
	if err != nil {
		f.Close()
		return nil, nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, 0, err
	}
	rec := uint64(h.RecordSize())
	if h.Samples > (math.MaxInt64-uint64(hlen))/rec {
		f.Close()
		return nil, nil, 0, fmt.Errorf("%s: offset 32: %d samples cannot fit in a file", path, h.Samples)
	}
	if want := hlen + int64(h.Samples*rec); st.Size() != want {
		f.Close()
		if st.Size() < want {
			whole := uint64(max(st.Size()-hlen, 0)) / rec
			return nil, nil, 0, fmt.Errorf("%s: offset %d: truncated: the header promises %d samples (%d bytes), the file has %d bytes (%d whole samples)",
				path, st.Size(), h.Samples, want, st.Size(), whole)
		}
		return nil, nil, 0, fmt.Errorf("%s: offset %d: %d bytes past the %d samples the header promises", path, want, st.Size()-want, h.Samples)
	}
	return h, f, hlen, nil
}

// Header is the file's header.
func (fl *File) Header() Header { return *fl.h }

// checkSum checks record i, read from offset at, against its checksum (a
// version 1 file has none).
func (fl *File) checkSum(i uint64, at int64, r []byte) error {
	if !fl.h.summed() {
		return nil
	}
	n := len(r) - 4
	if got, want := binary.LittleEndian.Uint32(r[n:]), recordSum(i, r[:n]); got != want {
		return fmt.Errorf("%s: offset %d: record %d is corrupt: its %d bytes (to offset %d) sum to %08x, its checksum says %08x",
			fl.path, at, i, len(r), at+int64(len(r))-1, want, got)
	}
	return nil
}

// TrainBatches is how many distinct training batches the file holds.
func (fl *File) TrainBatches() uint64 { return fl.nTrain }

// Close closes the file.
func (fl *File) Close() error { return fl.f.Close() }

// Fill reads batch seq into a: training batch seq modulo the file's
// training batches, or, when eval, held-out batch seq − dataset.batches
// (the loader numbers held-out batches after the training ones). Any
// value a model could not train on (an ID out of range, a label outside
// [0, 1], a dense feature that is not finite) is an error naming its byte
// offset.
func (fl *File) Fill(seq uint64, eval bool, a Arrays) error {
	d := fl.d
	if err := a.check(d, seq); err != nil {
		return err
	}
	B := uint64(d.BatchSize)
	var first uint64
	if eval {
		e := seq - uint64(d.Batches)
		if seq < uint64(d.Batches) || e >= uint64(d.EvalBatches) {
			return fmt.Errorf("%s: held-out batch %d is not one of the %d after the %d training batches", fl.path, seq, d.EvalBatches, d.Batches)
		}
		first = fl.h.Samples - (uint64(d.EvalBatches)-e)*B
	} else {
		first = (seq % fl.nTrain) * B
	}
	bp := fl.bufs.Get().(*[]byte)
	defer fl.bufs.Put(bp)
	buf := *bp
	off := fl.data + int64(first)*fl.rec
	if n, err := fl.f.ReadAt(buf, off); n < len(buf) {
		return fmt.Errorf("%s: offset %d: batch %d: %v", fl.path, off+int64(n), seq, errOrEOF(err))
	}
	h := fl.h
	le := binary.LittleEndian
	idB := int64(h.idBytes())
	perTable := d.BatchSize * d.Lookups
	for i := 0; i < d.BatchSize; i++ {
		r := buf[int64(i)*fl.rec : int64(i+1)*fl.rec]
		at := off + int64(i)*fl.rec
		if err := fl.checkSum(first+uint64(i), at, r); err != nil {
			return err
		}
		label := math.Float32frombits(le.Uint32(r))
		if !(label >= 0 && label <= 1) {
			return fmt.Errorf("%s: offset %d: sample %d: label %g is not in [0, 1]", fl.path, at, first+uint64(i), label)
		}
		a.Labels[i] = label
		for f := 0; f < h.Dense; f++ {
			x := math.Float32frombits(le.Uint32(r[4+4*f:]))
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return fmt.Errorf("%s: offset %d: sample %d: dense feature %d is %g", fl.path, at+4+4*int64(f), first+uint64(i), f, x)
			}
			a.Dense[i*h.Dense+f] = x
		}
		p := int64(4 + 4*h.Dense)
		for t := 0; t < h.Tables; t++ {
			for j := 0; j < h.Lookups; j++ {
				var id uint64
				if idB == 4 {
					id = uint64(le.Uint32(r[p:]))
				} else {
					id = le.Uint64(r[p:])
				}
				if id >= uint64(h.Rows[t]) {
					return fmt.Errorf("%s: offset %d: sample %d: table %d ID %d is not below the table's %d rows", fl.path, at+p, first+uint64(i), t, id, h.Rows[t])
				}
				a.IDs[t*perTable+i*d.Lookups+j] = int64(id)
				p += idB
			}
		}
	}
	for t := 0; t < h.Tables; t++ {
		off := a.Offsets[t*(d.BatchSize+1) : (t+1)*(d.BatchSize+1)]
		for i := range off {
			off[i] = int64(i * d.Lookups)
		}
	}
	return nil
}
