package scratchpipe

import (
	"math/rand/v2"

	"github.com/flowrun/flowrun/sdk/cache/plankit"
)

// victimSet holds a table's un-held, filled slots: the only slots a plan
// may evict. A slot's key (recency, count) does not change while it is in
// the set, since using a slot holds it first.
type victimSet interface {
	Add(s int32)
	Remove(s int32)
	// Pick removes and returns the slot to evict.
	Pick() (int32, bool)
	// Len is the number of candidates.
	Len() int
}

// keyedVictims picks the smallest key: the least recently used slot, or
// the least frequently used with ties by recency.
type keyedVictims struct {
	heap *plankit.SlotHeap
	key  func(s int32) plankit.Key
}

func (v *keyedVictims) Add(s int32)         { v.heap.Push(s, v.key(s)) }
func (v *keyedVictims) Remove(s int32)      { v.heap.Remove(s) }
func (v *keyedVictims) Pick() (int32, bool) { return v.heap.Pop() }
func (v *keyedVictims) Len() int            { return v.heap.Len() }

// randomVictims picks uniformly from a deterministic generator.
type randomVictims struct {
	slots []int32
	pos   []int32 // slot -> index in slots, -1 when absent
	rng   *rand.Rand
}

func newRandomVictims(capacity int32, rng *rand.Rand) *randomVictims {
	v := &randomVictims{pos: make([]int32, capacity), rng: rng}
	for i := range v.pos {
		v.pos[i] = -1
	}
	return v
}

func (v *randomVictims) Add(s int32) {
	v.pos[s] = int32(len(v.slots))
	v.slots = append(v.slots, s)
}

func (v *randomVictims) Remove(s int32) {
	i := v.pos[s]
	if i < 0 {
		return
	}
	last := v.slots[len(v.slots)-1]
	v.slots[i] = last
	v.pos[last] = i
	v.slots = v.slots[:len(v.slots)-1]
	v.pos[s] = -1
}

func (v *randomVictims) Len() int { return len(v.slots) }

func (v *randomVictims) Pick() (int32, bool) {
	if len(v.slots) == 0 {
		return -1, false
	}
	s := v.slots[v.rng.IntN(len(v.slots))]
	v.Remove(s)
	return s, true
}
