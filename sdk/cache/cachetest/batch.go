package cachetest

import (
	"fmt"
	"testing"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/region"
)

// Values the suite fills output arrays with before a call, so that an entry
// the policy forgot to write is caught.
const (
	unwrittenSlot = -7
	unwrittenHit  = 7
)

// batch is one Plan request with its regions.
type batch struct {
	ids     [][]int64 // per table
	n       int64
	idsR    *region.Region
	slotsR  *region.Region
	hitsR   *region.Region
	victimR *region.Region
	req     *cache.PlanRequest
}

// newBatch lays ids (per table) out in fresh regions, closed when t ends.
func newBatch(t testing.TB, seq uint64, ids [][]int64) *batch {
	t.Helper()
	b := &batch{ids: ids}
	offsets := make([]int64, len(ids)+1)
	for i, tab := range ids {
		offsets[i+1] = offsets[i] + int64(len(tab))
	}
	b.n = offsets[len(ids)]
	n := max(b.n, 1)
	label := fmt.Sprintf("cachetest-%d", seq)
	b.idsR = newRegion(t, label+"-ids", 8*n)
	b.slotsR = newRegion(t, label+"-slots", 8*n)
	b.hitsR = newRegion(t, label+"-hits", n)
	b.victimR = newRegion(t, label+"-victims", 24*n)
	all := region.Int64s(b.idsR.Bytes())
	pos := 0
	for _, tab := range ids {
		pos += copy(all[pos:], tab)
	}
	b.req = &cache.PlanRequest{
		Seq:          seq,
		IDs:          b.idsR.Ref(),
		TableOffsets: offsets,
		Slots:        b.slotsR.Ref(),
		Hits:         b.hitsR.Ref(),
		Victims:      b.victimR.Ref(),
	}
	b.reset()
	return b
}

// reset fills the outputs with values no policy may leave there.
func (b *batch) reset() {
	slots, hits, victims := b.slots(), b.hits(), b.victims()
	for i := range slots {
		slots[i] = unwrittenSlot
	}
	for i := range hits {
		hits[i] = unwrittenHit
	}
	for i := range victims {
		victims[i] = unwrittenSlot
	}
}

func (b *batch) slots() []int64   { return region.Int64s(b.slotsR.Bytes())[:b.n] }
func (b *batch) hits() []byte     { return b.hitsR.Bytes()[:b.n] }
func (b *batch) victims() []int64 { return region.Int64s(b.victimR.Bytes())[:3*b.n] }

// outcome is what a policy answered for a batch, copied out of the regions.
type outcome struct {
	slots   [][]int64 // per table, per lookup
	hits    [][]byte
	victims [][3]int64
	result  *cache.PlanResult
}

func (b *batch) outcome(res *cache.PlanResult) outcome {
	o := outcome{result: res}
	slots, hits := b.slots(), b.hits()
	pos := 0
	for _, tab := range b.ids {
		o.slots = append(o.slots, append([]int64(nil), slots[pos:pos+len(tab)]...))
		o.hits = append(o.hits, append([]byte(nil), hits[pos:pos+len(tab)]...))
		pos += len(tab)
	}
	if res != nil && res.Victims > 0 && res.Victims <= b.n {
		v := b.victims()
		for i := int64(0); i < res.Victims; i++ {
			o.victims = append(o.victims, [3]int64{v[3*i], v[3*i+1], v[3*i+2]})
		}
	}
	return o
}

func newRegion(t testing.TB, label string, size int64) *region.Region {
	t.Helper()
	r, err := region.Create(label, size)
	if err != nil {
		t.Fatalf("create region: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}
