package hazard

// rowMap maps a host row to a shard's entry for it (entry+1; 0 is
// empty). It is an open-addressing table with linear probing and
// backward-shift deletion rather than a Go map because its use is
// delete-heavy: every batch adds its victims' rows and removes an earlier
// batch's, and most lookups (collect's missed rows) are for rows that are
// absent. A Go map leaves a tombstone per delete, and absent-key lookups
// then probe past them; backward shift leaves none, so a lookup stops at
// the first empty cell however many rows have come and gone. A key and
// its value share a cell, so a lookup is one cache miss.
type rowMap struct {
	cells []rowCell
	n     int
	shift uint // 64 − log2(len(cells))
}

type rowCell struct {
	key int64
	val int32
}

func (m *rowMap) home(k int64) int {
	return int((uint64(k) * 0x9E3779B97F4A7C15) >> m.shift)
}

// find returns k's cell index, or −1.
func (m *rowMap) find(k int64) int {
	if m.n == 0 {
		return -1
	}
	mask := len(m.cells) - 1
	for i := m.home(k); ; i = (i + 1) & mask {
		c := &m.cells[i]
		if c.val == 0 {
			return -1
		}
		if c.key == k {
			return i
		}
	}
}

func (m *rowMap) get(k int64) int32 {
	if i := m.find(k); i >= 0 {
		return m.cells[i].val
	}
	return 0
}

// set maps k to v (≠ 0), replacing k's value if it has one.
func (m *rowMap) set(k int64, v int32) {
	if 2*(m.n+1) > len(m.cells) {
		m.grow()
	}
	mask := len(m.cells) - 1
	for i := m.home(k); ; i = (i + 1) & mask {
		c := &m.cells[i]
		if c.val == 0 {
			c.key, c.val = k, v
			m.n++
			return
		}
		if c.key == k {
			c.val = v
			return
		}
	}
}

// del removes k.
func (m *rowMap) del(k int64) {
	if i := m.find(k); i >= 0 {
		m.delAt(i)
	}
}

// delAt empties cell i and shifts back the cells after it that probed
// past it, so that no lookup ever has to skip a hole.
func (m *rowMap) delAt(i int) {
	mask := len(m.cells) - 1
	m.n--
	for j := i; ; {
		m.cells[i].val = 0
		for {
			j = (j + 1) & mask
			if m.cells[j].val == 0 {
				return
			}
			// The cell at j may move to i unless its home h lies
			// cyclically in (i, j].
			h := m.home(m.cells[j].key)
			if i <= j {
				if i < h && h <= j {
					continue
				}
			} else if i < h || h <= j {
				continue
			}
			break
		}
		m.cells[i] = m.cells[j]
		i = j
	}
}

func (m *rowMap) grow() {
	old := m.cells
	size := max(2*len(old), 64)
	m.cells, m.n = make([]rowCell, size), 0
	m.shift = 64
	for s := size; s > 1; s >>= 1 {
		m.shift--
	}
	for _, c := range old {
		if c.val != 0 {
			m.set(c.key, c.val)
		}
	}
}
