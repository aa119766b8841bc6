package hazard

import "sync"

// ring is how many batches a Checker tells apart at once: a batch is a
// bit of a 64-bit mask, at position seq mod ring.
const ring = 64

// shard is one table's tracked writes. Every slot and every host row with
// a write tracked has words uint64s: for each writing stage (a column),
// a mask of the batches with a write pending there, then, in strict mode,
// for each column a mask of the batches whose write there is done but
// retained. Slots are a dense array indexed by slot; host rows, which can
// number billions, go through a rowMap to an entry of rowWords.
//
// Checking a read is then a load and an AND per index, and declaring or
// retiring a write an OR or an AND-NOT: no allocation, no pointer chasing,
// the words of one index in one cache line.
type shard struct {
	mu     sync.Mutex
	strict bool
	cols   []uint16 // column → stage id
	colOf  []int16  // stage id → column, −1
	words  int      // uint64s per index: len(cols), doubled in strict mode

	slots    []uint64 // [slot][words]
	rows     rowMap   // host row → entry+1
	rowWords []uint64 // [entry][words]
	rowFree  []int32

	// lists holds, per batch, stage and kind, the indices written (once
	// each), so that Wrote and Done can clear exactly their bits.
	lists map[writerKey]*wlist
	spare []*wlist

	pending, retained int
}

type writerKey struct {
	seq   uint64
	stage uint16
	kind  Kind
}

// wlist is what one batch writes at one stage to one kind of target of
// one table.
type wlist struct {
	idx     []int64
	rows    []int64 // the rows written into slots, parallel to idx; nil when unknown
	retired bool
}

func newShard(strict bool) *shard {
	return &shard{strict: strict, lists: map[writerKey]*wlist{}}
}

// col returns stage's column, adding one when the shard first sees it.
func (s *shard) col(stage uint16) int {
	if int(stage) < len(s.colOf) && s.colOf[stage] >= 0 {
		return int(s.colOf[stage])
	}
	for len(s.colOf) <= int(stage) {
		s.colOf = append(s.colOf, -1)
	}
	c := len(s.cols)
	s.colOf[stage] = int16(c)
	s.cols = append(s.cols, stage)
	old, n := s.words, len(s.cols)
	s.words = n
	if s.strict {
		s.words = 2 * n
	}
	s.slots = relayout(s.slots, old, s.words, n-1)
	s.rowWords = relayout(s.rowWords, old, s.words, n-1)
	return c
}

// relayout widens every index's words from old to w after adding a column
// to the oldCols there were: the pending columns stay, the retained ones
// (strict mode) move up by one.
func relayout(a []uint64, old, w, oldCols int) []uint64 {
	if old == 0 || len(a) == 0 {
		return a[:0]
	}
	n := len(a) / old
	b := make([]uint64, n*w)
	for i := range n {
		src, dst := a[i*old:(i+1)*old], b[i*w:(i+1)*w]
		copy(dst, src[:oldCols])
		if old > oldCols {
			copy(dst[oldCols+1:], src[oldCols:])
		}
	}
	return b
}

// item returns the words of one index, or nil when nothing is tracked
// there and create is false.
func (s *shard) item(k Kind, index int64, create bool) []uint64 {
	w := int64(s.words)
	if k == Slot {
		if (index+1)*w > int64(len(s.slots)) {
			if !create {
				return nil
			}
			n := max(index+1, 2*int64(len(s.slots))/w)
			s.slots = append(s.slots, make([]uint64, n*w-int64(len(s.slots)))...)
		}
		return s.slots[index*w : (index+1)*w]
	}
	e := s.rows.get(index)
	if e == 0 {
		if !create {
			return nil
		}
		if n := len(s.rowFree); n > 0 {
			e, s.rowFree = s.rowFree[n-1]+1, s.rowFree[:n-1]
		} else {
			s.rowWords = append(s.rowWords, make([]uint64, w)...)
			e = int32(int64(len(s.rowWords)) / w)
		}
		s.rows.set(index, e)
	}
	return s.rowWords[int64(e-1)*w : int64(e)*w]
}

// clearRows clears bit in column c of every host row of idx (and sets
// it in column set, when set ≥ 0), freeing a row's entry once nothing is
// tracked there. One lookup per row: the cell found is the one deleted.
func (s *shard) clearRows(idx []int64, c, set int, bit uint64) {
	w := int64(s.words)
	for _, x := range idx {
		i := s.rows.find(x)
		if i < 0 {
			continue
		}
		e := int64(s.rows.cells[i].val - 1)
		ws := s.rowWords[e*w : (e+1)*w]
		ws[c] &^= bit
		if set >= 0 {
			ws[set] |= bit
			continue
		}
		empty := true
		for _, x := range ws {
			empty = empty && x == 0
		}
		if empty {
			s.rows.delAt(i)
			s.rowFree = append(s.rowFree, int32(e))
		}
	}
}

// clearSlots is clearRows for slots.
func (s *shard) clearSlots(idx []int64, c, set int, bit uint64) {
	w := int64(s.words)
	for _, x := range idx {
		ws := s.slots[x*w : (x+1)*w]
		ws[c] &^= bit
		if set >= 0 {
			ws[set] |= bit
		}
	}
}

func (s *shard) clear(k Kind, idx []int64, c, set int, bit uint64) {
	if k == Slot {
		s.clearSlots(idx, c, set, bit)
	} else {
		s.clearRows(idx, c, set, bit)
	}
}

func (s *shard) newList() *wlist {
	if n := len(s.spare); n > 0 {
		l := s.spare[n-1]
		s.spare = s.spare[:n-1]
		return l
	}
	return &wlist{}
}

// add declares writes of batch seq at stage; it returns whether it made a
// new list (which holds a reference on the batch's ring position).
func (s *shard) add(seq uint64, stage uint16, ws *WriteSet) bool {
	c := s.col(stage)
	bit := uint64(1) << (seq % ring)
	key := writerKey{seq, stage, ws.Kind}
	l, existed := s.lists[key]
	if !existed {
		l = s.newList()
	}
	for j, x := range ws.Index {
		if x < 0 {
			continue
		}
		w := s.item(ws.Kind, x, true)
		if w[c]&bit != 0 {
			continue // declared already
		}
		w[c] |= bit
		l.idx = append(l.idx, x)
		if ws.Rows != nil {
			for len(l.rows) < len(l.idx)-1 {
				l.rows = append(l.rows, -1)
			}
			l.rows = append(l.rows, ws.Rows[j])
		}
		s.pending++
	}
	if len(l.idx) == 0 {
		s.spare = append(s.spare, l)
		return false
	}
	s.lists[key] = l
	return !existed
}

// retire ends the pending writes of one list: kept as retained when keep
// (strict mode), cleared otherwise. It returns 1 when the list is gone
// (its ring reference to drop), 0 when kept or absent.
func (s *shard) retire(key writerKey, keep bool) int {
	l, ok := s.lists[key]
	if !ok || l.retired {
		return 0
	}
	c := int(s.colOf[key.stage])
	bit := uint64(1) << (key.seq % ring)
	set := -1
	if keep {
		set = len(s.cols) + c
	}
	s.clear(key.kind, l.idx, c, set, bit)
	s.pending -= len(l.idx)
	if keep {
		l.retired = true
		s.retained += len(l.idx)
		return 0
	}
	s.free(key, l)
	return 1
}

// release frees the retained writes of one list (strict mode). It returns
// 1 when it freed one.
func (s *shard) release(key writerKey) int {
	l, ok := s.lists[key]
	if !ok || !l.retired {
		return 0
	}
	c := len(s.cols) + int(s.colOf[key.stage])
	bit := uint64(1) << (key.seq % ring)
	s.clear(key.kind, l.idx, c, -1, bit)
	s.retained -= len(l.idx)
	s.free(key, l)
	return 1
}

func (s *shard) free(key writerKey, l *wlist) {
	delete(s.lists, key)
	l.idx, l.rows, l.retired = l.idx[:0], l.rows[:0], false
	s.spare = append(s.spare, l)
}

// writtenRow is the row the writer declared for slot index, or −1.
func (s *shard) writtenRow(key writerKey, index int64) int64 {
	if l, ok := s.lists[key]; ok {
		for j, x := range l.idx {
			if x == index {
				if j < len(l.rows) {
					return l.rows[j]
				}
				break
			}
		}
	}
	return -1
}
