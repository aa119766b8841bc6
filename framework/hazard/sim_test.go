package hazard

import (
	"fmt"
	"math/rand/v2"
)

// The tests drive the Checker with plans from a small ScratchPipe-style
// policy (a Hit-Map with LRU victims and a Hold mask over a past and a
// future window, Algorithm 1) on a trace with reuse, run through the
// six-stage pipeline in lockstep.

// Pipeline positions, as in ScratchPipe's Fig. 10.
var pipeline = []string{"load", "plan", "collect", "exchange", "insert", "train"}

const (
	posPlan    = 1
	posCollect = 2
	posInsert  = 4
	posTrain   = 5
)

// trace makes n batches of tables × ids Zipf-distributed IDs over rows.
func trace(seed uint64, n, tables, ids int, rows uint64) [][][]int64 {
	r := rand.New(rand.NewPCG(seed, 7))
	z := rand.NewZipf(r, 1.2, 1, rows-1)
	out := make([][][]int64, n)
	for b := range out {
		out[b] = make([][]int64, tables)
		for t := range out[b] {
			for range ids {
				out[b][t] = append(out[b][t], int64(z.Uint64()))
			}
		}
	}
	return out
}

// policy is one table's Hit-Map and Storage occupancy, updated at plan
// time as ScratchPipe's is.
type policy struct {
	hitMap map[int64]int64 // row → slot
	rowIn  []int64         // slot → row, -1 empty
}

// planner plans every batch of a trace with hold windows past and future.
// Its victim is a random slot whose row the Hold mask does not hold, so
// that rows of the batches in flight are as likely to go as any other
// when the windows do not protect them.
type planner struct {
	trace        [][][]int64
	past, future int
	tables       []*policy
	rand         *rand.Rand
}

func newPlanner(tr [][][]int64, capacity, past, future int) *planner {
	p := &planner{trace: tr, past: past, future: future, rand: rand.New(rand.NewPCG(uint64(past*10+future), 3))}
	for range tr[0] {
		pol := &policy{hitMap: map[int64]int64{}, rowIn: make([]int64, capacity)}
		for i := range pol.rowIn {
			pol.rowIn[i] = -1
		}
		p.tables = append(p.tables, pol)
	}
	return p
}

// planned is a batch's plan and its missed (table, row) pairs, one per
// distinct missed row.
type planned struct {
	PlannedBatch
	miss [][2]int64
}

// plan returns batch b's plan, as the plan stage would write it into the
// batch arrays.
func (p *planner) plan(b int) (planned, error) {
	pb := planned{PlannedBatch: PlannedBatch{Trains: true}}
	for t, pol := range p.tables {
		held := map[int64]bool{}
		for d := -p.past; d <= p.future; d++ {
			if b+d >= 0 && b+d < len(p.trace) {
				for _, id := range p.trace[b+d][t] {
					held[id] = true
				}
			}
		}
		missed := map[int64]bool{}
		pb.IndexStart = append(pb.IndexStart, int64(len(pb.IDs)))
		for _, id := range p.trace[b][t] {
			pb.IDs = append(pb.IDs, id)
			if s, ok := pol.hitMap[id]; ok {
				pb.Slots = append(pb.Slots, s)
				// A row this batch missed is a miss at every position:
				// it is not in Storage before insert.
				if missed[id] {
					pb.Hits = append(pb.Hits, 0)
				} else {
					pb.Hits = append(pb.Hits, 1)
				}
				continue
			}
			var free, eligible []int
			for s, row := range pol.rowIn {
				switch {
				case row < 0:
					free = append(free, s)
				case !held[row]:
					eligible = append(eligible, s)
				}
			}
			var victim int
			switch {
			case len(free) > 0:
				victim = free[0]
			case len(eligible) > 0:
				victim = eligible[p.rand.IntN(len(eligible))]
			default:
				return pb, fmt.Errorf("batch %d table %d: every slot is held", b, t)
			}
			if old := pol.rowIn[victim]; old >= 0 {
				delete(pol.hitMap, old)
				pb.Victims = append(pb.Victims, int64(t), old, int64(victim))
				pb.NVictims++
			}
			pol.rowIn[victim] = id
			pol.hitMap[id] = int64(victim)
			missed[id] = true
			pb.Slots = append(pb.Slots, int64(victim))
			pb.Hits = append(pb.Hits, 0)
			pb.miss = append(pb.miss, [2]int64{int64(t), id})
		}
	}
	pb.IndexStart = append(pb.IndexStart, int64(len(pb.IDs)))
	return pb, nil
}

// lockstep runs batches through the six stages in the paper's lockstep
// order: in step c stage k works on batch c−k. Stages of one step run
// concurrently, which the simulation makes as hard as it can for the
// plan: every read of a step comes before every write of the step.
// check, when set, is the per-batch work of the reading stages.
func lockstep(c *Checker, p *planner, n int) error {
	plans := make([]planned, n)
	for step := 0; step < n+len(pipeline)-1; step++ {
		var wrote []func()
		for k := range pipeline {
			b := step - k
			if b < 0 || b >= n {
				continue
			}
			switch k {
			case posPlan:
				pb, err := p.plan(b)
				if err != nil {
					return err
				}
				plans[b] = pb
				w, err := pb.Writes()
				if err != nil {
					return err
				}
				if err := c.Plan(uint64(b), w); err != nil {
					return err
				}
			case posCollect:
				if err := collectReads(c, uint64(b), plans[b]); err != nil {
					return err
				}
			case posInsert:
				wrote = append(wrote, func() { c.Wrote(uint64(b), "insert") })
			case posTrain:
				if err := trainReads(c, uint64(b), plans[b]); err != nil {
					return err
				}
				wrote = append(wrote, func() { c.Wrote(uint64(b), "train"); c.Done(uint64(b)) })
			}
		}
		for _, f := range wrote {
			f()
		}
	}
	return nil
}

// sequential runs one batch through every stage before the next.
func sequential(c *Checker, p *planner, n int) error {
	for b := range n {
		pb, err := p.plan(b)
		if err != nil {
			return err
		}
		w, err := pb.Writes()
		if err != nil {
			return err
		}
		seq := uint64(b)
		if err := c.Plan(seq, w); err != nil {
			return err
		}
		if err := collectReads(c, seq, pb); err != nil {
			return err
		}
		c.Wrote(seq, "insert")
		if err := trainReads(c, seq, pb); err != nil {
			return err
		}
		c.Wrote(seq, "train")
		c.Done(seq)
	}
	return nil
}

// collectReads is what the collect stage reads: every victim's slot out
// of Storage, and every missed row that is not the batch's own victim
// from the host tables.
func collectReads(c *Checker, seq uint64, pb planned) error {
	if err := c.ReadTriples(seq, "collect", Slot, pb.Victims, pb.NVictims); err != nil {
		return err
	}
	own := map[[2]int64]bool{}
	for i := range pb.NVictims {
		own[[2]int64{pb.Victims[3*i], pb.Victims[3*i+1]}] = true
	}
	for _, m := range pb.miss {
		if !own[m] {
			if err := c.ReadRows(seq, "collect", int(m[0]), []int64{m[1]}); err != nil {
				return err
			}
		}
	}
	return nil
}

// trainReads is what train reads: every slot it looks up.
func trainReads(c *Checker, seq uint64, pb planned) error {
	for t := range len(pb.IndexStart) - 1 {
		if err := c.ReadSlots(seq, "train/train", t, pb.Slots[pb.IndexStart[t]:pb.IndexStart[t+1]]); err != nil {
			return err
		}
	}
	return nil
}
