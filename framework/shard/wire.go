package shard

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// The wire format: a request is one op byte and its little-endian
// arguments; a reply is a status byte (statusOK, or statusErr followed by
// the error's text) and the op's results. Rows travel as their Stride
// float32s, native (flowrun supports little-endian hosts only).
const (
	opConfigure byte = iota + 1 // seed u64, dim u32, stride u32, T u32, rows T×i64
	opFetch                     // T u32, per table: n u32, n×i64 → rows
	opReturn                    // T u32, per table: n u32, n×i64, n×stride f32 → ()
	opCount                     // () → T×u64 rows the shard holds
	opScan                      // table u32, after i64, limit u32 → n u32, n×i64, n rows
	opPing                      // () → index u32, of u32
	opDone                      // () → (): the run is over, drop its tables

	statusOK  byte = 0
	statusErr byte = 1
)

// overhead is room left under max_payload for a message's headers and
// counts.
const overhead = 4096

// enc appends little-endian values.
type enc struct{ b []byte }

func (e *enc) u32(v uint32) { e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *enc) u64(v uint64) { e.b = binary.LittleEndian.AppendUint64(e.b, v) }
func (e *enc) ids(v []int64) {
	if len(v) > 0 {
		e.b = append(e.b, unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 8*len(v))...)
	}
}
func (e *enc) floats(v []float32) {
	if len(v) > 0 {
		e.b = append(e.b, unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))...)
	}
}

// dec reads what enc wrote; the first short read sets err.
type dec struct {
	b   []byte
	err error
}

var errShort = errors.New("short message")

func (d *dec) take(n int) []byte {
	if d.err != nil || n < 0 || n > len(d.b) {
		d.err = errShort
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *dec) u32() uint32 {
	if b := d.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *dec) u64() uint64 {
	if b := d.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// ids copies n int64s.
func (d *dec) ids(n int) []int64 {
	b := d.take(8 * n)
	if b == nil {
		return nil
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out
}

// floats copies n float32s into dst.
func (d *dec) floats(dst []float32) {
	b := d.take(4 * len(dst))
	if b == nil {
		return
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
}

// replyErr is a failed reply's bytes.
func replyErr(err error) []byte { return append([]byte{statusErr}, err.Error()...) }

// status checks a reply's status byte and returns the rest.
func status(reply []byte) (*dec, error) {
	if len(reply) == 0 {
		return nil, errShort
	}
	if reply[0] != statusOK {
		return nil, fmt.Errorf("%s", reply[1:])
	}
	return &dec{b: reply[1:]}, nil
}
