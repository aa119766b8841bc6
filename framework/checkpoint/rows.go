package checkpoint

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// The rows part holds the host tables' touched rows as the tables hold
// them, byte for byte, so that whatever a row's layout (float32 values
// then optimizer state, or packed low-precision values) it comes back
// unchanged. Little-endian:
//
//	tables uint32
//	per table: rowBytes uint32, rows uint64, then per row: id uint64, rowBytes bytes
//
// IDs ascend within a table (the touched bitmap in order).

// RowSource is what EncodeRows reads: per table, its touched IDs in
// ascending order and each row's bytes.
type RowSource interface {
	Tables() int
	RowBytes(table int) int
	TouchedIDs(table int) []int64
	// RowData returns the bytes of a touched row (valid until the next call).
	RowData(table int, id int64) []byte
}

// EncodeRows writes src's touched rows to w in the rows part's format.
func EncodeRows(w io.Writer, src RowSource) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var b [12]byte
	binary.LittleEndian.PutUint32(b[:4], uint32(src.Tables()))
	bw.Write(b[:4])
	for t := range src.Tables() {
		ids, rb := src.TouchedIDs(t), src.RowBytes(t)
		binary.LittleEndian.PutUint32(b[:4], uint32(rb))
		binary.LittleEndian.PutUint64(b[4:12], uint64(len(ids)))
		bw.Write(b[:12])
		for _, id := range ids {
			binary.LittleEndian.PutUint64(b[:8], uint64(id))
			bw.Write(b[:8])
			row := src.RowData(t, id)
			if len(row) != rb {
				return fmt.Errorf("rows: table %d row %d is %d bytes, the table's rows are %d", t, id, len(row), rb)
			}
			if _, err := bw.Write(row); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// DecodeRows reads a rows part, calling header once per table (its row
// bytes and row count) and row for every row. It refuses data that ends
// early, runs on, or whose IDs do not ascend.
func DecodeRows(data []byte, header func(table, rowBytes int, rows uint64) error, row func(table int, id int64, raw []byte) error) error {
	take := func(n uint64, what string) ([]byte, error) {
		if uint64(len(data)) < n {
			return nil, fmt.Errorf("%w: rows: ends inside %s", ErrCorrupt, what)
		}
		b := data[:n]
		data = data[n:]
		return b, nil
	}
	b, err := take(4, "the table count")
	if err != nil {
		return err
	}
	tables := int(binary.LittleEndian.Uint32(b))
	for t := range tables {
		if b, err = take(12, fmt.Sprintf("table %d's header", t)); err != nil {
			return err
		}
		rb, n := int(binary.LittleEndian.Uint32(b[:4])), binary.LittleEndian.Uint64(b[4:])
		if n > uint64(len(data))/uint64(8+rb) {
			return fmt.Errorf("%w: rows: table %d claims %d rows of %d bytes, more than the part holds", ErrCorrupt, t, n, rb)
		}
		if err := header(t, rb, n); err != nil {
			return err
		}
		last := int64(-1)
		for range n {
			b, _ = take(uint64(8+rb), "a row")
			id := int64(binary.LittleEndian.Uint64(b[:8]))
			if id <= last {
				return fmt.Errorf("%w: rows: table %d: row %d after row %d", ErrCorrupt, t, id, last)
			}
			last = id
			if err := row(t, id, b[8:]); err != nil {
				return err
			}
		}
	}
	if len(data) != 0 {
		return fmt.Errorf("%w: rows: %d bytes after the last table", ErrCorrupt, len(data))
	}
	return nil
}
