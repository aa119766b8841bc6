package scratchpipe

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// planShape is one benchmark's tables, batch and cache, with windows 3 and
// 2 as graphs/scratchpipe.yaml and the paper set them.
type planShape struct {
	tables   int
	rows     int64
	lookups  int // per table per batch: batch size × lookups
	capacity int64
	// s and q are the Zipf–Mandelbrot law of the IDs, P(rank k) ∝
	// (q + k)^-s.
	s, q float64
	// ring is how many distinct batches are cycled through.
	ring int
}

// BenchmarkPlanGraph is graphs/scratchpipe.yaml's shape: 8 tables of
// 500 000 rows, batch 512 × 8 lookups, Zipf s = 1.05, cache 5 % of the
// rows.
func BenchmarkPlanGraph(b *testing.B) {
	benchmarkPlan(b, planShape{tables: 8, rows: 500_000, lookups: 512 * 8, capacity: 25_000, s: 1.05, q: 1, ring: 32})
}

// BenchmarkPlanPaper is ScratchPipe's default model (Sec. V): 8 tables of
// ten million rows, batch 2048 × 20 lookups, a Storage of 250 000 rows
// per table, the medium locality of framework/data.
func BenchmarkPlanPaper(b *testing.B) {
	benchmarkPlan(b, planShape{tables: 8, rows: 10_000_000, lookups: 2048 * 20, capacity: 250_000, s: 1.441416, q: 0.00944289 * 10_000_000, ring: 8})
}

func benchmarkPlan(b *testing.B, sh planShape) {
	const past, future = 3, 2
	setup := plugin.Setup{Seed: 1, Options: json.RawMessage(fmt.Sprintf(`{"capacity":%d,"past":%d,"future":%d}`, sh.capacity, past, future))}
	for range sh.tables {
		setup.Tables = append(setup.Tables, plugin.Table{Rows: sh.rows, Dim: 16})
	}
	c := New()
	if err := c.Configure(context.Background(), setup); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	zipf := rand.NewZipf(rng, sh.s, sh.q, uint64(sh.rows-1))
	a := cachetest.NewArena(b, int64(sh.ring*sh.tables*sh.lookups)*48+1<<16)
	plans := make([]*cachetest.Plan, sh.ring)
	for i := range plans {
		ids := make([][]int64, sh.tables)
		for t := range ids {
			ids[t] = make([]int64, sh.lookups)
			for j := range ids[t] {
				// Scatter the popularity ranks over the table.
				ids[t][j] = int64((zipf.Uint64()*0x9E3779B97F4A7C15 + uint64(t)) % uint64(sh.rows))
			}
		}
		plans[i] = a.NewPlan(0, ids)
	}
	seq := 0
	plan := func() {
		p := plans[seq%sh.ring]
		p.Req.Seq = uint64(seq)
		p.Req.Future = p.Req.Future[:0]
		for j := 1; j <= future; j++ {
			p.Req.Future = append(p.Req.Future, cache.Window{Seq: uint64(seq + j), IDs: plans[(seq+j)%sh.ring].Req.IDs})
		}
		if _, err := c.Plan(context.Background(), p.Req); err != nil {
			b.Fatal(err)
		}
		seq++
	}
	// Fill the Storage first: the steady state evicts on every batch.
	for range 2 * sh.ring {
		plan()
	}
	b.ResetTimer()
	for range b.N {
		plan()
	}
}
