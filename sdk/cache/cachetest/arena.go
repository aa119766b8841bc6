package cachetest

import (
	"context"
	"testing"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/region/regiontest"
)

// Arena is a shared-memory arena (sdk/region/regiontest) that lays out
// plan requests as a host does, for a policy's own tests:
//
//	a := cachetest.NewArena(t, 1<<16)
//	p := a.NewPlan(1, [][]int64{{7, 8, 7}})
//	res, err := policy.Plan(ctx, p.Req)
//	... p.Slots(0), p.Hits(0), p.Victims(res.Victims)
//
// or, where the policy must accept the batch, p, res := a.Planned(t, policy, 1, []int64{7, 8, 7}).
type Arena struct{ *regiontest.Arena }

// NewArena creates an arena of size bytes, removed when the test ends.
func NewArena(t testing.TB, size int64) *Arena {
	t.Helper()
	return &Arena{regiontest.New(t, size)}
}

// Plan is a plan request laid out in an Arena, with readers for the
// policy's answers.
type Plan struct {
	Req *cache.PlanRequest
	a   *Arena
}

// NewPlan lays out ids (one slice per table) as a PlanRequest for batch
// seq, with room for every lookup's slot, hit flag and victim.
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

// Planned lays ids (one slice per table) out as batch seq and has c plan
// it, failing t on an error.
func (a *Arena) Planned(t testing.TB, c cache.Cache, seq uint64, ids ...[]int64) (*Plan, *cache.PlanResult) {
	t.Helper()
	p := a.NewPlan(seq, ids)
	res, err := c.Plan(context.Background(), p.Req)
	if err != nil {
		t.Fatalf("plan batch %d: %v", seq, err)
	}
	return p, res
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

// Victim is one evicted row: PlanResult.Victims triples, read back.
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
