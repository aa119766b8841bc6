package batch

import (
	"slices"
	"testing"
)

func TestStorage(t *testing.T) {
	if _, err := NewStorage(2, 0, 4, 0); err == nil {
		t.Error("capacity 0 accepted")
	}
	tabs, err := NewTables(1, 2, 10, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tabs.Close()
	s, err := NewStorage(2, 3, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Len() != 2 || s.Resident() != 0 || s.RowOf(1, 2) != -1 {
		t.Fatalf("new Storage: %d tables, %d resident", s.Len(), s.Resident())
	}
	if !s.ValidSlot(1, 2) || s.ValidSlot(1, 3) || s.ValidSlot(2, 0) || s.ValidSlot(0, -1) {
		t.Error("ValidSlot bounds")
	}
	k := s.Kernel()
	if len(k) != 2 || k[0].Rows != 3 || k[0].Dim != 4 || k[0].Data.Length != 3*4*4 {
		t.Errorf("Kernel() = %+v", k)
	}

	trained := []float32{1, 2, 3, 4}
	s.Fill(1, 2, 7, trained)
	s.Fill(0, 0, 5, tabs.Row(0, 5))
	s.Fill(0, 1, 6, []float32{9, 9, 9, 9})
	s.Evict(0, 1) // written back elsewhere: must not be flushed again
	host6 := slices.Clone(tabs.Row(0, 6))
	if s.RowOf(1, 2) != 7 || s.Resident() != 2 {
		t.Fatalf("RowOf(1,2) = %d, resident %d", s.RowOf(1, 2), s.Resident())
	}
	n, err := s.Flush(tabs)
	if err != nil || n != 2 {
		t.Fatalf("Flush = %d, %v; want 2 rows", n, err)
	}
	if !slices.Equal(tabs.Row(1, 7), trained) {
		t.Errorf("host row 7 = %v, want %v", tabs.Row(1, 7), trained)
	}
	if !slices.Equal(tabs.Row(0, 6), host6) {
		t.Error("an evicted slot was flushed")
	}
	if s.RowOf(1, 2) != 7 {
		t.Error("Flush emptied Storage")
	}

	other, err := NewTables(1, 3, 10, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := s.Flush(other); err == nil {
		t.Error("flushed 2 tables into 3")
	}
}

// Storage slots hold whole rows: the optimizer state goes in with the
// values and comes back out with them.
func TestStorageCarriesOptimizerState(t *testing.T) {
	const dim, stride = 4, 8
	tabs, err := NewTables(1, 1, 10, dim, stride)
	if err != nil {
		t.Fatal(err)
	}
	defer tabs.Close()
	s, err := NewStorage(1, 2, dim, stride)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if k := s.Kernel()[0]; k.Stride != stride || k.Data.Length != 2*stride*4 {
		t.Errorf("Kernel() = %+v", k)
	}
	row := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	s.Fill(0, 1, 3, row)
	if !slices.Equal(s.Row(0, 1), row) {
		t.Fatalf("slot = %v, want %v", s.Row(0, 1), row)
	}
	if _, err := s.Flush(tabs); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tabs.Row(0, 3), row) {
		t.Errorf("flushed row = %v, want %v", tabs.Row(0, 3), row)
	}
	narrow, err := NewTables(1, 1, 10, dim, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer narrow.Close()
	if _, err := s.Flush(narrow); err == nil {
		t.Error("flushed stride-8 slots into stride-4 rows")
	}
}

// Tables and Storage of different sizes per table: IDs are checked
// against their own table, a table gets only its own slots, and the
// virtual sizes add up per table.
func TestPerTableSizes(t *testing.T) {
	tabs, err := NewTablesRows(1, []int64{3, 100}, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer tabs.Close()
	if tabs.Rows != 100 || tabs.RowsOf(0) != 3 || tabs.VirtualBytes() != 103*4*4 {
		t.Fatalf("rows %d / %d, virtual %d", tabs.Rows, tabs.RowsOf(0), tabs.VirtualBytes())
	}
	if err := tabs.Touch(0, []int64{3}); err == nil {
		t.Error("row 3 of a 3-row table touched")
	}
	if err := tabs.Touch(1, []int64{3, 99}); err != nil {
		t.Error(err)
	}
	if k := tabs.Kernel(); k[0].Rows != 3 || k[1].Rows != 100 {
		t.Errorf("kernel tables %d, %d rows", k[0].Rows, k[1].Rows)
	}
	st, err := NewStorageSlots([]int64{3, 8}, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Capacity != 8 || st.CapacityOf(0) != 3 || st.ValidSlot(0, 3) || !st.ValidSlot(1, 7) || st.VirtualBytes() != 11*4*4 {
		t.Errorf("capacity %d / %d, valid(0,3) %v", st.Capacity, st.CapacityOf(0), st.ValidSlot(0, 3))
	}
	st.Fill(1, 7, 99, tabs.Row(1, 99))
	if n, err := st.Flush(tabs); err != nil || n != 1 {
		t.Errorf("flush: %d rows, %v", n, err)
	}
}
