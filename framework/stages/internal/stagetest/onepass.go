package stagetest

import (
	"context"
	"sync"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/plankit"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// OnePassFIFO is the name of a test-only policy (builtin:one-pass-fifo)
// that plans each batch in a single pass, in request order, with FIFO
// replacement among the slots the batch has not used yet. A row cached
// before the batch can then be evicted by an earlier miss of the same
// batch and, at its own lookup, be missed again and placed anew: a victim
// missed again within its own batch, whose freshest copy is the one
// collect reads from Storage, not the host row. No shipped policy makes
// that case (plankit.TwoPass holds every row a batch hits before any miss
// picks a victim); the digest tests need a run that does. It holds no
// window (plankit.Windowless), so only sequential graphs may use it.
const OnePassFIFO = "one-pass-fifo"

// replaced counts, per run ID, the victims builtin:one-pass-fifo placed
// again in their own batch.
var replaced = struct {
	sync.Mutex
	n map[string]int64
}{n: map[string]int64{}}

// ReplacedVictims is how many victims builtin:one-pass-fifo missed again
// and placed anew within their own batch in the run runID, so a test can
// tell that its workload made the case.
func ReplacedVictims(runID string) int64 {
	replaced.Lock()
	defer replaced.Unlock()
	return replaced.n[runID]
}

type fifoTable struct {
	rowOf  []int64 // -1: never filled
	slotOf map[int64]int32
	hand   int32 // the FIFO's next slot
	// usedIn and filledIn are the plan (epoch) that last looked up a
	// slot, and that last placed a row in it.
	usedIn, filledIn []uint64
}

type onePassFIFO struct {
	plankit.Guard
	plankit.Windowless
	tables []*fifoTable
	epoch  uint64
	runID  string
}

func (p *onePassFIFO) Info(context.Context) (plugin.Info, error) {
	return plankit.Info(OnePassFIFO, "0.1.0",
		"test-only: one pass in request order, FIFO among the slots the batch has not used; may evict a row the batch looks up later", plankit.HostFields()), nil
}

func (p *onePassFIFO) Configure(_ context.Context, setup plugin.Setup) error {
	return plankit.ConfigureTables(&p.Guard, setup, func(c int32) *fifoTable {
		tb := &fifoTable{rowOf: make([]int64, c), slotOf: map[int64]int32{}, usedIn: make([]uint64, c), filledIn: make([]uint64, c)}
		for s := range tb.rowOf {
			tb.rowOf[s] = -1
		}
		return tb
	}, func(tables []*fifoTable) { p.tables, p.epoch, p.runID = tables, 0, setup.RunID })
}

func (p *onePassFIFO) Plan(_ context.Context, req *cache.PlanRequest) (*cache.PlanResult, error) {
	return p.Guard.Plan(OnePassFIFO, req, func(b *cache.Batch) (*cache.PlanResult, error) {
		p.epoch++
		res := &cache.PlanResult{Tables: make([]cache.TableStats, len(p.tables))}
		var again int64
		for t, tb := range p.tables {
			lo, hi := b.Table(t)
			evicted := map[int64]bool{}
			for i := lo; i < hi; i++ {
				p.place(b, res, t, tb, i, evicted, &again)
			}
		}
		replaced.Lock()
		replaced.n[p.runID] += again
		replaced.Unlock()
		return res, nil
	})
}

// place plans position i of table t: a hit, a repeated miss, a miss into
// the next slot the batch has not used (evicting its row), or a bypass.
func (p *onePassFIFO) place(b *cache.Batch, res *cache.PlanResult, t int, tb *fifoTable, i int64, evicted map[int64]bool, again *int64) {
	st := &res.Tables[t]
	row := b.IDs[i]
	if s, ok := tb.slotOf[row]; ok {
		b.Slots[i], b.Hits[i] = int64(s), 1
		if tb.filledIn[s] == p.epoch { // placed by this batch: still a miss
			b.Hits[i] = 0
			st.Misses++
		} else {
			st.Hits++
		}
		tb.usedIn[s] = p.epoch
		return
	}
	st.Misses++
	b.Hits[i], b.Slots[i] = 0, -1
	c := int32(len(tb.rowOf))
	for range c {
		s := tb.hand
		tb.hand = (tb.hand + 1) % c
		if tb.usedIn[s] == p.epoch {
			continue
		}
		if old := tb.rowOf[s]; old >= 0 {
			v := b.Victims[3*res.Victims : 3*res.Victims+3]
			v[0], v[1], v[2] = int64(t), old, int64(s)
			res.Victims++
			st.Evictions++
			delete(tb.slotOf, old)
			evicted[old] = true
		}
		if evicted[row] {
			*again++
		}
		tb.rowOf[s], tb.slotOf[row] = row, s
		tb.usedIn[s], tb.filledIn[s] = p.epoch, p.epoch
		b.Slots[i] = int64(s)
		return
	}
}
