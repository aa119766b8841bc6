package plankit

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// SnapshotWriter and SnapshotReader encode a policy's state for
// cache.Snapshotter as the built-in policies do: a tag naming the policy
// and its format, then integers and integer arrays (each array with its
// length), little-endian.

// SnapshotWriter builds a snapshot.
type SnapshotWriter struct{ buf []byte }

// NewSnapshotWriter starts a snapshot with tag (e.g. "lru/1").
func NewSnapshotWriter(tag string) *SnapshotWriter {
	w := &SnapshotWriter{}
	w.Uint64(uint64(len(tag)))
	w.buf = append(w.buf, tag...)
	return w
}

// Uint64 appends one number.
func (w *SnapshotWriter) Uint64(v uint64) { w.buf = binary.LittleEndian.AppendUint64(w.buf, v) }

// Int64s appends an array.
func (w *SnapshotWriter) Int64s(xs []int64) {
	w.Uint64(uint64(len(xs)))
	for _, x := range xs {
		w.Uint64(uint64(x))
	}
}

// Uint64s appends an array.
func (w *SnapshotWriter) Uint64s(xs []uint64) {
	w.Uint64(uint64(len(xs)))
	for _, x := range xs {
		w.Uint64(x)
	}
}

// Int32s appends an array.
func (w *SnapshotWriter) Int32s(xs []int32) {
	w.Uint64(uint64(len(xs)))
	for _, x := range xs {
		w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(x))
	}
}

// Slots appends a table's resident rows (the Hit-Map).
func (w *SnapshotWriter) Slots(sl *Slots) {
	w.Uint64(uint64(sl.filled))
	w.Int64s(sl.rowOf[:sl.filled])
}

// Bytes is the snapshot.
func (w *SnapshotWriter) Bytes() []byte { return w.buf }

// SnapshotReader reads a snapshot a SnapshotWriter wrote. Its first error
// sticks: read everything, then ask Close.
type SnapshotReader struct {
	buf []byte
	err error
}

// NewSnapshotReader checks that snapshot starts with tag.
func NewSnapshotReader(snapshot []byte, tag string) (*SnapshotReader, error) {
	r := &SnapshotReader{buf: snapshot}
	n := r.Uint64("the tag")
	if r.err != nil || n > uint64(len(r.buf)) {
		return nil, fmt.Errorf("%w: too short for a tag", cache.ErrBadSnapshot)
	}
	if got := string(r.buf[:n]); got != tag {
		return nil, fmt.Errorf("%w: it is a %q snapshot, this policy's are %q", cache.ErrBadSnapshot, got, tag)
	}
	r.buf = r.buf[n:]
	return r, nil
}

func (r *SnapshotReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{cache.ErrBadSnapshot}, args...)...)
	}
}

// Uint64 reads one number.
func (r *SnapshotReader) Uint64(what string) uint64 {
	if r.err != nil {
		return 0
	}
	if len(r.buf) < 8 {
		r.fail("it ends before %s", what)
		return 0
	}
	v := binary.LittleEndian.Uint64(r.buf)
	r.buf = r.buf[8:]
	return v
}

// length reads an array's length, which must be want (or, want < 0, any
// that fits in what is left at size bytes each).
func (r *SnapshotReader) length(want int, size int, what string) int {
	n := r.Uint64(what)
	if r.err != nil {
		return 0
	}
	if (want >= 0 && n != uint64(want)) || n > uint64(len(r.buf)/size) {
		r.fail("%s has %d entries, want %d", what, n, want)
		return 0
	}
	return int(n)
}

// Int64s reads an array of len(dst) entries into dst.
func (r *SnapshotReader) Int64s(dst []int64, what string) {
	n := r.length(len(dst), 8, what)
	for i := range n {
		dst[i] = int64(binary.LittleEndian.Uint64(r.buf[8*i:]))
	}
	r.buf = r.buf[8*n:]
}

// Uint64s reads an array of len(dst) entries into dst.
func (r *SnapshotReader) Uint64s(dst []uint64, what string) {
	n := r.length(len(dst), 8, what)
	for i := range n {
		dst[i] = binary.LittleEndian.Uint64(r.buf[8*i:])
	}
	r.buf = r.buf[8*n:]
}

// Int32s reads an array of len(dst) entries into dst.
func (r *SnapshotReader) Int32s(dst []int32, what string) {
	n := r.length(len(dst), 4, what)
	for i := range n {
		dst[i] = int32(binary.LittleEndian.Uint32(r.buf[4*i:]))
	}
	r.buf = r.buf[4*n:]
}

// Slots reads a table's resident rows into a fresh Slots of sl's capacity
// and returns it (sl is left as it was, so a bad snapshot changes
// nothing).
func (r *SnapshotReader) Slots(sl *Slots, what string) Slots {
	out := NewSlots(sl.Cap())
	filled := r.Uint64(what + " filled")
	if filled > uint64(sl.Cap()) {
		r.fail("%s: %d slots filled of %d", what, filled, sl.Cap())
		return out
	}
	out.filled = int32(filled)
	r.Int64s(out.rowOf[:filled], what+" rows")
	for s, row := range out.rowOf[:out.filled] {
		if _, dup := out.slotOf.Get(row); dup || row < 0 {
			r.fail("%s: row %d in two slots", what, row)
			return out
		}
		out.slotOf.Put(row, int32(s))
	}
	return out
}

// Close is the first error, or one when bytes are left over.
func (r *SnapshotReader) Close() error {
	if r.err == nil && len(r.buf) != 0 {
		r.fail("%d bytes after the end", len(r.buf))
	}
	return r.err
}

// Locked runs f under the guard's lock, once the policy is configured:
// a Snapshot or Restore never interleaves with a Plan.
func (g *Guard) Locked(f func() error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tables == nil {
		return plugin.ErrNotConfigured
	}
	return f()
}

// Int64sAny reads an array of any length (a map's pairs, say).
func (r *SnapshotReader) Int64sAny(what string) []int64 {
	n := r.length(-1, 8, what)
	out := make([]int64, n)
	for i := range n {
		out[i] = int64(binary.LittleEndian.Uint64(r.buf[8*i:]))
	}
	r.buf = r.buf[8*n:]
	return out
}

// SlotHeap appends a heap exactly: its array order (which breaks ties
// between equal keys) and each member's key.
func (w *SnapshotWriter) SlotHeap(h *SlotHeap) {
	slots := make([]int32, len(h.heap))
	keys := make([]uint64, 0, 2*len(h.heap))
	for i, e := range h.heap {
		slots[i] = e.slot
		keys = append(keys, e.key.Major, e.key.Minor)
	}
	w.Int32s(slots)
	w.Uint64s(keys)
}

// SlotHeap reads a heap SnapshotWriter.SlotHeap wrote into a fresh heap
// of capacity slots.
func (r *SnapshotReader) SlotHeap(capacity int32, what string) *SlotHeap {
	h := NewSlotHeap(capacity)
	n := r.length(-1, 4, what)
	if n > int(capacity) {
		r.fail("%s: %d slots in a heap of %d", what, n, capacity)
		return h
	}
	heap := make([]int32, n)
	for i := range n {
		heap[i] = int32(binary.LittleEndian.Uint32(r.buf[4*i:]))
	}
	r.buf = r.buf[4*n:]
	keys := make([]uint64, 2*n)
	r.Uint64s(keys, what+" keys")
	for i, s := range heap {
		if s < 0 || s >= capacity || h.pos[s] >= 0 {
			r.fail("%s: slot %d twice or outside %d", what, s, capacity)
			return h
		}
		h.pos[s] = int32(i)
		h.heap = append(h.heap, heapEntry{key: Key{Major: keys[2*i], Minor: keys[2*i+1]}, slot: s})
	}
	return h
}

// SnapshotTables writes a policy's snapshot under the guard's lock: a
// writer of tag, head (the policy's own counters), the table count, then
// each table by table. Every built-in policy's snapshot has this shape.
func SnapshotTables[T any](g *Guard, tag string, head func(*SnapshotWriter), tables []T, table func(*SnapshotWriter, T)) ([]byte, error) {
	var out []byte
	err := g.Locked(func() error {
		w := NewSnapshotWriter(tag)
		head(w)
		w.Uint64(uint64(len(tables)))
		for _, tb := range tables {
			table(w, tb)
		}
		out = w.Bytes()
		return nil
	})
	return out, err
}

// RestoreTables reads a snapshot SnapshotTables wrote, under the guard's
// lock: head reads the policy's counters, the table count must be the
// policy's, table reads table t into a fresh one (old is the policy's,
// for its sizes), and commit gets the fresh tables only once the whole
// snapshot has read cleanly: a bad snapshot changes nothing.
func RestoreTables[T any](g *Guard, snapshot []byte, tag string, head func(*SnapshotReader), tables []T, table func(r *SnapshotReader, t int, old T, what string) T, commit func([]T)) error {
	return g.Locked(func() error {
		r, err := NewSnapshotReader(snapshot, tag)
		if err != nil {
			return err
		}
		head(r)
		if n := r.Uint64("tables"); n != uint64(len(tables)) && r.err == nil {
			return fmt.Errorf("%s snapshot: %d tables, the policy has %d", tag, n, len(tables))
		}
		fresh := make([]T, len(tables))
		for t, old := range tables {
			fresh[t] = table(r, t, old, fmt.Sprintf("table %d", t))
		}
		if err := r.Close(); err != nil {
			return err
		}
		commit(fresh)
		return nil
	})
}

// Blob appends opaque bytes (a policy's counters as JSON, say, so that a
// field added later round-trips).
func (w *SnapshotWriter) Blob(b []byte) {
	w.Uint64(uint64(len(b)))
	w.buf = append(w.buf, b...)
}

// Blob reads bytes Blob wrote (a copy).
func (r *SnapshotReader) Blob(what string) []byte {
	n := r.length(-1, 1, what)
	out := append([]byte(nil), r.buf[:n]...)
	r.buf = r.buf[n:]
	return out
}

// Fail records the first problem a policy finds in a snapshot's content
// (a size that is not its own, say), which Close then returns.
func (r *SnapshotReader) Fail(format string, args ...any) { r.fail(format, args...) }

// Pairs is a map from rows as (row, value) pairs in ascending row order:
// a snapshot of it is the same for the same map.
func Pairs[V any](m map[int64]V, val func(V) int64) []int64 {
	keys := slices.Sorted(maps.Keys(m))
	out := make([]int64, 0, 2*len(keys))
	for _, k := range keys {
		out = append(out, k, val(m[k]))
	}
	return out
}
