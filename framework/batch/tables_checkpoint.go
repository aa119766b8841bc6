package batch

import (
	"fmt"
	"math/bits"
	"unsafe"
)

// What a checkpoint needs of the host tables and Storage: the touched IDs,
// a row's bytes as the table holds them, and a way to put a saved row back
// (framework/checkpoint writes them; framework/engine resumes from them).

// TouchedIDs is table's touched rows in ascending order.
func (t *Tables) TouchedIDs(table int) []int64 {
	vt := t.tables[table]
	ids := make([]int64, 0, vt.touched.Load())
	for wi := range vt.bits {
		w := vt.bits[wi].Load()
		for w != 0 {
			ids = append(ids, int64(wi)*64+int64(bits.TrailingZeros64(w)))
			w &= w - 1
		}
	}
	return ids
}

// RowBytes is the bytes of one row of table as a checkpoint holds it: the
// Stride float32s of an FP32 table; a low-precision table's stored values
// (packed, or FP32 when emulated), its FP32 optimizer state, and one byte
// saying whether the row was written (Precision.KeepInit).
func (t *Tables) RowBytes(table int) int {
	if lt := t.tables[table].low; lt != nil {
		return lt.rowBytes + 4*(t.Stride-t.Dim) + 1
	}
	return 4 * t.Stride
}

// RowData is the bytes of row id of table as RowBytes describes them (the
// row is touched first if it was not): the row itself for an FP32 table, a
// copy for a low-precision one.
func (t *Tables) RowData(table int, id int64) []byte {
	lt := t.tables[table].low
	if lt == nil {
		row := t.Row(table, id)
		return unsafe.Slice((*byte)(unsafe.Pointer(&row[0])), 4*len(row))
	}
	t.ensureTouched(table, id)
	out := make([]byte, 0, t.RowBytes(table))
	out = append(out, lt.values[id*int64(lt.rowBytes):(id+1)*int64(lt.rowBytes)]...)
	if lt.state != nil {
		sf := int64(t.Stride - t.Dim)
		st := lt.state[id*sf : (id+1)*sf]
		out = append(out, unsafe.Slice((*byte)(unsafe.Pointer(&st[0])), 4*len(st))...)
	}
	var written byte
	if !t.Fresh(table, id) {
		written = 1
	}
	return append(out, written)
}

// RestoreRow touches row id of table and overwrites it with raw, bytes
// RowData gave for it: a resumed run's rows as the checkpointed run left
// them.
func (t *Tables) RestoreRow(table int, id int64, raw []byte) error {
	if table < 0 || table >= t.Len() || id < 0 || id >= t.rows[table] {
		return fmt.Errorf("host tables: row %d of table %d is outside the tables", id, table)
	}
	if len(raw) != t.RowBytes(table) {
		return fmt.Errorf("host table %d: a saved row of %d bytes, rows here are %d", table, len(raw), t.RowBytes(table))
	}
	lt := t.tables[table].low
	if lt == nil {
		copy(t.RowData(table, id), raw)
		return nil
	}
	t.ensureTouched(table, id)
	raw = raw[copy(lt.values[id*int64(lt.rowBytes):(id+1)*int64(lt.rowBytes)], raw):]
	if lt.state != nil {
		sf := int64(t.Stride - t.Dim)
		st := lt.state[id*sf : (id+1)*sf]
		raw = raw[copy(unsafe.Slice((*byte)(unsafe.Pointer(&st[0])), 4*len(st)), raw):]
	}
	if raw[0] == 1 {
		t.MarkWritten(table, []int64{id})
	}
	return nil
}

// ResidentRows maps each row Storage holds in table to its slot.
func (s *Storage) ResidentRows(table int) map[int64]int64 {
	m := make(map[int64]int64)
	for slot, row := range s.rowOf[table] {
		if row >= 0 {
			m[row] = int64(slot)
		}
	}
	return m
}

// SlotData is the bytes of a Storage slot's row.
func (s *Storage) SlotData(table int, slot int64) []byte {
	row := s.Row(table, slot)
	return unsafe.Slice((*byte)(unsafe.Pointer(&row[0])), 4*len(row))
}

// RestoreSlot puts a saved slot back: raw (SlotData's bytes) into slot,
// which then holds row.
func (s *Storage) RestoreSlot(table int, slot, row int64, raw []byte) error {
	if !s.ValidSlot(table, slot) || row < 0 {
		return fmt.Errorf("storage: slot %d of table %d (row %d) is outside Storage", slot, table, row)
	}
	dst := s.SlotData(table, slot)
	if len(raw) != len(dst) {
		return fmt.Errorf("storage table %d: a saved slot of %d bytes, slots here are %d", table, len(raw), len(dst))
	}
	copy(dst, raw)
	s.rowOf[table][slot] = row
	return nil
}
