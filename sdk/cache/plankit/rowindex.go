package plankit

import "math/bits"

// RowIndex maps table rows (≥ 0) to int32 values — the Hit-Map of a
// policy's Storage. It is an open-addressing table with linear probing and
// backward-shift deletion, sized once for a capacity, so a lookup is a
// multiply, a shift and (usually) one cache line, with no allocation and
// no tombstones: Plan looks up every ID of every batch here, and a Go map
// spent a third of Plan's time hashing and matching control bytes.
//
// Nothing iterates it, so its order never reaches a plan: a policy's
// decisions are the same as with any other map.
type RowIndex struct {
	keys  []int64 // empty slots hold -1
	vals  []int32
	shift uint8
	n     int
}

// NewRowIndex returns an index for up to capacity rows; it grows past that
// if asked (a set of rows a batch misses, say), never shrinks.
func NewRowIndex(capacity int) RowIndex {
	var x RowIndex
	x.alloc(capacity)
	return x
}

func (x *RowIndex) alloc(capacity int) {
	// Load ≤ 1/2: short probe sequences even for clustered row numbers.
	size := 1 << max(4, bits.Len(uint(2*max(capacity, 1)-1)))
	x.keys = make([]int64, size)
	for i := range x.keys {
		x.keys[i] = -1
	}
	x.vals = make([]int32, size)
	x.shift = uint8(64 - bits.TrailingZeros(uint(size)))
	x.n = 0
}

// home is row's first slot: Fibonacci hashing, so rows that are close
// (a table's hot rows often are) land far apart.
func (x *RowIndex) home(row int64) int {
	return int((uint64(row) * 0x9E3779B97F4A7C15) >> x.shift)
}

// Get returns row's value.
func (x *RowIndex) Get(row int64) (int32, bool) {
	mask := len(x.keys) - 1
	for i := x.home(row); ; i = (i + 1) & mask {
		switch x.keys[i] {
		case row:
			return x.vals[i], true
		case -1:
			return 0, false
		}
	}
}

// Put sets row's value.
func (x *RowIndex) Put(row int64, v int32) {
	if 2*(x.n+1) > len(x.keys) {
		x.grow()
	}
	mask := len(x.keys) - 1
	for i := x.home(row); ; i = (i + 1) & mask {
		switch x.keys[i] {
		case row:
			x.vals[i] = v
			return
		case -1:
			x.keys[i], x.vals[i] = row, v
			x.n++
			return
		}
	}
}

// Delete removes row, moving back the entries after it in its probe run
// so that every remaining row is still found from its home slot.
func (x *RowIndex) Delete(row int64) {
	mask := len(x.keys) - 1
	i := x.home(row)
	for ; x.keys[i] != row; i = (i + 1) & mask {
		if x.keys[i] == -1 {
			return
		}
	}
	x.n--
	for j := (i + 1) & mask; x.keys[j] != -1; j = (j + 1) & mask {
		// The entry at j may move to the hole at i only if its home is
		// not in (i, j] (cyclically): then i is on its probe path.
		h := x.home(x.keys[j])
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			x.keys[i], x.vals[i] = x.keys[j], x.vals[j]
			i = j
		}
	}
	x.keys[i] = -1
}

// Len is the number of rows held.
func (x *RowIndex) Len() int { return x.n }

// Clear removes every row, keeping the memory.
func (x *RowIndex) Clear() {
	if x.n == 0 {
		return
	}
	for i := range x.keys {
		x.keys[i] = -1
	}
	x.n = 0
}

func (x *RowIndex) grow() {
	keys, vals := x.keys, x.vals
	x.alloc(len(keys)) // twice the rows: alloc sizes for 2× its argument
	for i, k := range keys {
		if k != -1 {
			x.Put(k, vals[i])
		}
	}
}
