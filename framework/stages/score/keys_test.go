package score

import (
	"slices"
	"testing"

	"github.com/flowrun/flowrun/sdk/device"
)

// TestRowKeys: every lookup of every bag, table by table, as the device
// sees it (device.RowKey), from the kernel's bag layout — offsets per
// table, IDs from each table's start.
func TestRowKeys(t *testing.T) {
	// Two tables, two bags each: table 0 looks up 5 | 6 7, table 1 (its
	// IDs from index 3) 9 9 | (nothing).
	ids := []int64{5, 6, 7, 9, 9}
	offs := []int64{0, 1, 3, 0, 2, 2}
	start := []int64{0, 3}
	got := rowKeys(nil, ids, offs, start, 2)
	want := []uint64{device.RowKey(0, 5), device.RowKey(0, 6), device.RowKey(0, 7), device.RowKey(1, 9), device.RowKey(1, 9)}
	if !slices.Equal(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
}
