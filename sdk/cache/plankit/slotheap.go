package plankit

// Key orders slots: the smaller Major first, then the smaller Minor.
type Key struct{ Major, Minor uint64 }

func (k Key) less(o Key) bool {
	return k.Major < o.Major || (k.Major == o.Major && k.Minor < o.Minor)
}

// SlotHeap holds a subset of the slots [0, capacity), each with a key fixed
// while it is in the heap.
//
// Each heap entry carries its slot's key, so a sift compares neighbours in
// one array instead of following every slot to a key elsewhere: with tens
// of thousands of slots those were two cache misses per comparison, and a
// sixth of Plan's time.
type SlotHeap struct {
	pos  []int32 // slot -> index in heap, -1 when absent
	heap []heapEntry
}

type heapEntry struct {
	key  Key
	slot int32
}

// NewSlotHeap returns an empty heap for capacity slots.
func NewSlotHeap(capacity int32) *SlotHeap {
	h := &SlotHeap{pos: make([]int32, capacity), heap: make([]heapEntry, 0, capacity)}
	for i := range h.pos {
		h.pos[i] = -1
	}
	return h
}

// Len is the number of slots in the heap.
func (h *SlotHeap) Len() int { return len(h.heap) }

// Contains reports whether slot s is in the heap.
func (h *SlotHeap) Contains(s int32) bool { return h.pos[s] >= 0 }

// Push adds slot s with key k; s must not be in the heap.
func (h *SlotHeap) Push(s int32, k Key) {
	h.pos[s] = int32(len(h.heap))
	h.heap = append(h.heap, heapEntry{key: k, slot: s})
	h.up(len(h.heap) - 1)
}

// Remove takes slot s out of the heap, reporting whether it was there.
func (h *SlotHeap) Remove(s int32) bool {
	i := int(h.pos[s])
	if i < 0 {
		return false
	}
	last := len(h.heap) - 1
	if i != last {
		h.swap(i, last)
	}
	h.heap = h.heap[:last]
	h.pos[s] = -1
	if i != last {
		if !h.down(i) {
			h.up(i)
		}
	}
	return true
}

// Pop removes and returns the slot with the smallest key.
func (h *SlotHeap) Pop() (int32, bool) {
	if len(h.heap) == 0 {
		return -1, false
	}
	s := h.heap[0].slot
	h.Remove(s)
	return s, true
}

func (h *SlotHeap) swap(i, j int) {
	h.heap[i], h.heap[j] = h.heap[j], h.heap[i]
	h.pos[h.heap[i].slot] = int32(i)
	h.pos[h.heap[j].slot] = int32(j)
}

// up sifts i towards the root. It moves a hole instead of swapping: the
// entry is written once, where it stops, and every entry it passes moves
// down one level — the same places a swap at each level would give.
func (h *SlotHeap) up(i int) {
	e := h.heap[i]
	for i > 0 {
		p := (i - 1) / 2
		if !e.key.less(h.heap[p].key) {
			break
		}
		h.heap[i] = h.heap[p]
		h.pos[h.heap[i].slot] = int32(i)
		i = p
	}
	h.heap[i] = e
	h.pos[e.slot] = int32(i)
}

// down sifts i towards the leaves and reports whether it moved. It moves
// the hole all the way to a leaf along the smaller children (one
// comparison a level, not two) and then back up to where the entry
// belongs: the entry that replaces a removed one is the heap's last, a
// large key that seldom climbs far. The path is the one a plain sift-down
// follows and the keys along it never decrease, so the entry stops below
// the same last key smaller than it: the same places, ties included.
func (h *SlotHeap) down(i int) bool {
	hp, pos := h.heap, h.pos
	start, n := i, len(hp)
	e := hp[i]
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m, c := l, &hp[l]
		if r := l + 1; r < n && hp[r].key.less(c.key) {
			m, c = r, &hp[r]
		}
		hp[i] = *c
		pos[c.slot] = int32(i)
		i = m
	}
	for i > start {
		p := (i - 1) / 2
		if hp[p].key.less(e.key) {
			break
		}
		hp[i] = hp[p]
		pos[hp[i].slot] = int32(i)
		i = p
	}
	hp[i] = e
	pos[e.slot] = int32(i)
	return i > start
}
