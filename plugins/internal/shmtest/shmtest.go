// Package shmtest gives the built-in plugins' tests a shared-memory arena:
// one real region (under /dev/shm) carved into 8-byte aligned refs, so that
// tests exercise the same mapping path as a host does.
package shmtest

import (
	"testing"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/region"
)

// Arena hands out refs from one region.
type Arena struct {
	t    testing.TB
	r    *region.Region
	next int64
}

// New creates an arena of size bytes, removed when the test ends.
func New(t testing.TB, size int64) *Arena {
	t.Helper()
	r, err := region.Create("plugintest", size)
	if err != nil {
		t.Fatalf("create region: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return &Arena{t: t, r: r}
}

// Alloc returns a zeroed ref of n bytes.
func (a *Arena) Alloc(n int64) region.Ref {
	a.t.Helper()
	if a.next+n > a.r.Size() {
		a.t.Fatalf("arena full: %d + %d > %d", a.next, n, a.r.Size())
	}
	ref := region.Ref{Region: a.r.Name(), Offset: a.next, Length: n}
	clear(a.Bytes(ref))
	a.next += (n + 7) &^ 7
	return ref
}

// Bytes returns ref's bytes.
func (a *Arena) Bytes(ref region.Ref) []byte {
	return a.r.Bytes()[ref.Offset : ref.Offset+ref.Length]
}

// Int64s stores v and returns its ref.
func (a *Arena) Int64s(v []int64) region.Ref {
	ref := a.Alloc(int64(len(v)) * 8)
	copy(region.Int64s(a.Bytes(ref)), v)
	return ref
}

// Float32s stores v and returns its ref.
func (a *Arena) Float32s(v []float32) region.Ref {
	ref := a.Alloc(int64(len(v)) * 4)
	copy(region.Float32s(a.Bytes(ref)), v)
	return ref
}

// ReadInt64s copies ref's int64s.
func (a *Arena) ReadInt64s(ref region.Ref) []int64 {
	return append([]int64(nil), region.Int64s(a.Bytes(ref))...)
}

// ReadFloat32s copies ref's float32s.
func (a *Arena) ReadFloat32s(ref region.Ref) []float32 {
	return append([]float32(nil), region.Float32s(a.Bytes(ref))...)
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
