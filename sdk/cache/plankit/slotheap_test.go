package plankit

import (
	"math/rand/v2"
	"testing"
)

// The heap must agree with a linear scan for the minimum under any mix of
// pushes, removals and pops.
func TestMatchesScan(t *testing.T) {
	const n = 64
	rng := rand.New(rand.NewPCG(1, 2))
	h := NewSlotHeap(n)
	in := map[int32]Key{}
	for step := range 20000 {
		s := int32(rng.IntN(n))
		switch rng.IntN(3) {
		case 0:
			if _, ok := in[s]; !ok {
				k := Key{uint64(rng.IntN(8)), uint64(step)}
				h.Push(s, k)
				in[s] = k
			}
		case 1:
			_, ok := in[s]
			if got := h.Remove(s); got != ok {
				t.Fatalf("step %d: Remove(%d) = %v, want %v", step, s, got, ok)
			}
			delete(in, s)
		case 2:
			want, found := int32(-1), false
			for x, k := range in {
				if !found || k.less(in[want]) {
					want, found = x, true
				}
			}
			got, ok := h.Pop()
			if ok != found || got != want {
				t.Fatalf("step %d: Pop = %d, %v; want %d, %v", step, got, ok, want, found)
			}
			delete(in, got)
		}
		if h.Len() != len(in) {
			t.Fatalf("step %d: Len %d, want %d", step, h.Len(), len(in))
		}
		if _, ok := in[s]; h.Contains(s) != ok {
			t.Fatalf("step %d: Contains(%d) wrong", step, s)
		}
	}
}
