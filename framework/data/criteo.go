package data

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
)

// The Criteo Kaggle display-advertising TSV (train.txt): one sample a
// line, 40 tab-separated fields: the label, 13 integer features I1–I13
// and 26 categorical features C1–C26, each an anonymised 32-bit value in
// hex. Any field but the label may be empty.
const (
	// CriteoDense is the number of integer (dense) features.
	CriteoDense = 13
	// CriteoTables is the number of categorical features, one embedding
	// table each.
	CriteoTables = 26
	criteoFields = 1 + CriteoDense + CriteoTables
)

// maxLine bounds a line of the text formats; a Criteo line is a few
// hundred bytes, a MovieLens line a few dozen.
const maxLine = 64 << 10

// CriteoSample is one parsed line, preprocessed as the DLRM reference
// (facebookresearch/dlrm, data_utils.py and dlrm_data_pytorch.py) does:
// a missing field reads as "0"; integer features below 0 become 0 and
// then log(x+1); categorical values are parsed as hex, to be hashed to a
// table's rows by the caller (value mod rows, DLRM's --max-ind-range).
type CriteoSample struct {
	// Label is 0 (no click) or 1 (click).
	Label float32
	// Dense are log(max(x, 0) + 1) of I1–I13.
	Dense [CriteoDense]float32
	// Cat are the values of C1–C26 (0 when missing).
	Cat [CriteoTables]uint64
}

// CriteoReader reads Criteo Kaggle TSV samples. Its errors name the input
// and the line (`train.txt:1234: field 15 (C1): ...`); it never panics on
// any input.
type CriteoReader struct {
	lineReader
}

// NewCriteoReader reads the TSV in r; name (a file name) prefixes errors.
func NewCriteoReader(r io.Reader, name string) *CriteoReader {
	return &CriteoReader{newLineReader(r, name)}
}

// Next parses the next sample into s. It returns io.EOF after the last
// line, and after any error returns that error again.
func (c *CriteoReader) Next(s *CriteoSample) error {
	line, err := c.next()
	if err != nil {
		return err
	}
	if err := ParseCriteoLine(line, s); err != nil {
		return c.fail(err)
	}
	return nil
}

// lineReader is what the text formats' readers share: lines counted for
// messages (`train.txt:1234: ...`), and the first error kept, so that every
// later call returns it again.
type lineReader struct {
	name string
	r    *bufio.Reader
	line int
	err  error
}

func newLineReader(r io.Reader, name string) lineReader {
	return lineReader{name: name, r: bufio.NewReaderSize(r, maxLine)}
}

// next returns the next line, or io.EOF after the last one, or the error
// of an earlier call.
func (l *lineReader) next() ([]byte, error) {
	if l.err != nil {
		return nil, l.err
	}
	line, err := readLine(l.r)
	l.line++
	switch {
	case err == io.EOF:
		l.err = io.EOF
		return nil, io.EOF
	case err != nil:
		return nil, l.fail(err)
	}
	return line, nil
}

// fail keeps err, placed at the line read last, as the reader's error.
func (l *lineReader) fail(err error) error {
	l.err = fmt.Errorf("%s:%d: %w", l.name, l.line, err)
	return l.err
}

// errLineTooLong is the error of a line longer than maxLine.
var errLineTooLong = fmt.Errorf("line longer than %d bytes", maxLine)

// readLine returns the next line without its "\n" or "\r\n"; io.EOF
// when there is none. A last line without "\n" is a line.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, errLineTooLong
	case err == io.EOF && len(line) == 0:
		return nil, io.EOF
	case err != nil && err != io.EOF:
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), nil
}

// ParseCriteoLine parses one line (without its newline) into s.
func ParseCriteoLine(line []byte, s *CriteoSample) error {
	if n := bytes.Count(line, []byte("\t")) + 1; n != criteoFields {
		hint := ""
		if n == criteoFields-1 {
			hint = "; a Criteo test file has no label column and cannot be trained on"
		}
		return fmt.Errorf("%d tab-separated fields, want %d (label, %d integer, %d categorical)%s",
			n, criteoFields, CriteoDense, CriteoTables, hint)
	}
	for i := 0; i < criteoFields; i++ {
		field := line
		if j := bytes.IndexByte(line, '\t'); j >= 0 {
			field, line = line[:j], line[j+1:]
		}
		switch {
		case i == 0:
			switch string(field) {
			case "0":
				s.Label = 0
			case "1":
				s.Label = 1
			case "":
				return errors.New("field 1 (label) is empty, want 0 or 1")
			default:
				return fmt.Errorf("field 1 (label): %s is not 0 or 1", quote(field))
			}
		case i <= CriteoDense:
			x, ok := parseInt(field)
			if !ok {
				return fmt.Errorf("field %d (I%d): %s is not an integer", i+1, i, quote(field))
			}
			s.Dense[i-1] = float32(math.Log1p(float64(max(x, 0))))
		default:
			v, ok := parseHex(field)
			if !ok {
				return fmt.Errorf("field %d (C%d): %s is not a hexadecimal value of at most 16 digits", i+1, i-CriteoDense, quote(field))
			}
			s.Cat[i-1-CriteoDense] = v
		}
	}
	return nil
}

// parseInt parses an optionally signed decimal integer; empty is 0 (DLRM
// reads a missing value as "0").
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, true
	}
	neg := false
	switch b[0] {
	case '-':
		neg, b = true, b[1:]
	case '+':
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var x int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		x = x*10 + int64(c-'0')
	}
	if neg {
		x = -x
	}
	return x, true
}

// parseHex parses up to 16 hex digits; empty is 0.
func parseHex(b []byte) (uint64, bool) {
	if len(b) > 16 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | uint64(d)
	}
	return v, true
}

// quote quotes a field for a message, cut to 40 bytes.
func quote(b []byte) string {
	if len(b) > 40 {
		return fmt.Sprintf("%q…", b[:40])
	}
	return fmt.Sprintf("%q", b)
}

// ConvertOptions shape a conversion to a batch file.
type ConvertOptions struct {
	// Rows is the rows of each table. Criteo's categorical values are
	// hashed to them (value mod Rows); MovieLens's users and movies are
	// numbered densely and folded into them (index mod Rows) only when
	// there are more. 0: DefaultCriteoRows for Criteo, as many as there
	// are users and movies for MovieLens.
	Rows int64
	// Limit stops after this many samples (0: all of them).
	Limit uint64
	// Categorify numbers each Criteo field's values densely, in order of
	// first occurrence, instead of hashing them mod Rows: a table has as
	// many rows as its field has values (Kaggle's cardinalities), and the
	// header records each. Rows is then unused.
	Categorify bool
	// MinCount, with Categorify and Counts, sends every value seen fewer
	// than MinCount times (in Counts) to row 0, shared by the rare values;
	// the others are numbered from 1. ≤ 1: every value has its own row.
	MinCount uint64
	// Counts is each field's value counts (CountCriteo over the same
	// input), read when MinCount > 1.
	Counts []map[uint64]uint64
}

// DefaultCriteoRows is the rows per table of a Criteo conversion that
// names none: the graphs' default dataset.rows.
const DefaultCriteoRows = 100000

// ConvertCriteo reads Criteo Kaggle TSV from r (name is for messages) and
// writes the batch file out: 26 tables of one lookup, 13 dense features,
// samples in the order of the input (the Kaggle file is in time order, so
// the held-out batches, the file's last, are its latest samples, like
// DLRM's split by day).
func ConvertCriteo(r io.Reader, name, out string, opt ConvertOptions) (*Header, error) {
	rows := opt.Rows
	if rows == 0 {
		rows = DefaultCriteoRows
	}
	if rows < 1 {
		return nil, fmt.Errorf("rows must be ≥ 1, got %d", rows)
	}
	var dict *categories
	if opt.Categorify {
		var err error
		if dict, err = newCategories(opt); err != nil {
			return nil, err
		}
		rows = math.MaxUint32 + 1 // the widest 4-byte IDs; SetRows gives the counts
	}
	h := Header{Source: "criteo", Tables: CriteoTables, Lookups: 1, Dense: CriteoDense, Rows: make([]int64, CriteoTables)}
	for t := range h.Rows {
		h.Rows[t] = rows
	}
	w, err := Create(out, h)
	if err != nil {
		return nil, err
	}
	cr := NewCriteoReader(r, name)
	var s CriteoSample
	ids := make([]int64, CriteoTables)
	for opt.Limit == 0 || w.Samples() < opt.Limit {
		if err := cr.Next(&s); err == io.EOF {
			break
		} else if err != nil {
			w.Abort()
			return nil, err
		}
		for t, v := range s.Cat {
			if dict != nil {
				ids[t] = dict.id(t, v)
			} else {
				ids[t] = int64(v % uint64(rows))
			}
		}
		if err := w.Append(s.Label, s.Dense[:], ids); err != nil {
			w.Abort()
			return nil, err
		}
	}
	if w.Samples() == 0 {
		w.Abort()
		return nil, fmt.Errorf("%s: no samples", name)
	}
	if dict != nil {
		h.Rows = dict.rows()
		if err := w.SetRows(h.Rows); err != nil {
			w.Abort()
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	h.Samples = w.Samples()
	return &h, nil
}

// categories is a categorified conversion's dense dictionary per field:
// value → row, rows numbered in order of first occurrence (from 1 when
// row 0 holds the rare values).
type categories struct {
	ids      []map[uint64]int64
	counts   []map[uint64]uint64
	minCount uint64
	first    int64 // 1 when row 0 is the rare values' row
}

func newCategories(opt ConvertOptions) (*categories, error) {
	c := &categories{ids: make([]map[uint64]int64, CriteoTables)}
	for t := range c.ids {
		c.ids[t] = make(map[uint64]int64)
	}
	if opt.MinCount > 1 {
		if len(opt.Counts) != CriteoTables {
			return nil, fmt.Errorf("a minimum count needs each field's value counts (%d fields, got %d)", CriteoTables, len(opt.Counts))
		}
		c.counts, c.minCount, c.first = opt.Counts, opt.MinCount, 1
	}
	return c, nil
}

// id is the row of value v of field t.
func (c *categories) id(t int, v uint64) int64 {
	if c.counts != nil && c.counts[t][v] < c.minCount {
		return 0
	}
	id, ok := c.ids[t][v]
	if !ok {
		id = c.first + int64(len(c.ids[t]))
		c.ids[t][v] = id
	}
	return id
}

// rows is each table's rows: its values (and the rare values' row).
func (c *categories) rows() []int64 {
	rows := make([]int64, len(c.ids))
	for t, m := range c.ids {
		rows[t] = max(1, c.first+int64(len(m)))
	}
	return rows
}

// CountCriteo counts each field's values over the first limit samples of
// Criteo Kaggle TSV (0: all): the first pass of a categorified conversion
// with a minimum count.
func CountCriteo(r io.Reader, name string, limit uint64) ([]map[uint64]uint64, error) {
	counts := make([]map[uint64]uint64, CriteoTables)
	for t := range counts {
		counts[t] = make(map[uint64]uint64)
	}
	cr := NewCriteoReader(r, name)
	var s CriteoSample
	for n := uint64(0); limit == 0 || n < limit; n++ {
		if err := cr.Next(&s); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		for t, v := range s.Cat {
			counts[t][v]++
		}
	}
	return counts, nil
}
