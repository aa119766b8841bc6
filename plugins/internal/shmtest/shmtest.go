// Package shmtest gives the built-in plugins' tests the SDK's arena
// (sdk/region/regiontest) and, for cache policies, plan requests laid out
// in it.
package shmtest

import (
	"testing"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/region/regiontest"
)

// Arena is regiontest's arena, with NewPlan.
type Arena struct{ *regiontest.Arena }

// New creates an arena of size bytes, removed when the test ends.
func New(t testing.TB, size int64) *Arena {
	t.Helper()
	return &Arena{regiontest.New(t, size)}
}

// Plan is a cache plan request laid out in an arena, with readers for its
// outputs.
type Plan struct {
	Req *cache.PlanRequest
	a   *Arena
}

// NewPlan lays out ids (one slice per table) as a PlanRequest for batch seq.
func (a *Arena) NewPlan(seq uint64, ids [][]int64) *Plan {
	var flat []int64
	offsets := []int64{0}
	for _, tab := range ids {
		flat = append(flat, tab...)
		offsets = append(offsets, int64(len(flat)))
	}
	n := int64(len(flat))
	req := &cache.PlanRequest{
		Seq:          seq,
		IDs:          a.Int64s(flat),
		TableOffsets: offsets,
		Slots:        a.Alloc(8 * n),
		Hits:         a.Alloc(n),
		Victims:      a.Alloc(24 * n),
	}
	return &Plan{Req: req, a: a}
}

// Slots returns the slots of table t.
func (p *Plan) Slots(t int) []int64 {
	all := p.a.ReadInt64s(p.Req.Slots)
	return all[p.Req.TableOffsets[t]:p.Req.TableOffsets[t+1]]
}

// Hits returns the hit flags of table t.
func (p *Plan) Hits(t int) []byte {
	all := append([]byte(nil), p.a.Bytes(p.Req.Hits)...)
	return all[p.Req.TableOffsets[t]:p.Req.TableOffsets[t+1]]
}

// Victim is one evicted row.
type Victim struct{ Table, Row, Slot int64 }

// Victims returns the first n victim triples.
func (p *Plan) Victims(n int64) []Victim {
	v := p.a.ReadInt64s(p.Req.Victims)
	out := make([]Victim, n)
	for i := range out {
		out[i] = Victim{Table: v[3*i], Row: v[3*i+1], Slot: v[3*i+2]}
	}
	return out
}
