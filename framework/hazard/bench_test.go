package hazard

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
)

// The benchmark's workload: ScratchPipe's default batch (2048 samples × 20
// lookups = 40960 IDs per table) over 8 tables. Half of each table's IDs
// hit a hot set of 4096 slots every batch shares; the other half miss, each
// a distinct row filled into a cold region that batch b reuses from b−8,
// whose rows are its victims. So each batch declares 40960 train writes,
// 20480 fills and 20480 write-backs per table, and reads 20480 victim
// slots and 20480 host rows at collect and 40960 slots at train, while up
// to five batches are in flight: the hot slots carry several batches'
// pending writes at once.
const (
	benchTables = 8
	benchIDs    = 40960
	benchHot    = 4096
	benchCold   = benchIDs / 2
	benchRegion = 8
	benchSlots  = benchHot + benchRegion*benchCold
)

type benchBatch struct {
	pb     PlannedBatch
	misses []int64 // (table, row, slot) triples
}

func benchWorkload(b int) *benchBatch {
	r := rand.New(rand.NewPCG(uint64(b), 1))
	bb := &benchBatch{pb: PlannedBatch{Trains: true}}
	pb := &bb.pb
	region := int64(benchHot + (b%benchRegion)*benchCold)
	for t := range benchTables {
		pb.IndexStart = append(pb.IndexStart, int64(len(pb.IDs)))
		for i := range benchIDs {
			if i%2 == 0 {
				s := int64(r.IntN(benchHot))
				pb.IDs, pb.Slots, pb.Hits = append(pb.IDs, s), append(pb.Slots, s), append(pb.Hits, 1)
				continue
			}
			slot, row := region+int64(i/2), int64(1_000_000+b*benchCold+i/2)
			pb.IDs, pb.Slots, pb.Hits = append(pb.IDs, row), append(pb.Slots, slot), append(pb.Hits, 0)
			bb.misses = append(bb.misses, int64(t), row, slot)
			if b >= benchRegion {
				pb.Victims = append(pb.Victims, int64(t), int64(1_000_000+(b-benchRegion)*benchCold+i/2), slot)
				pb.NVictims++
			}
		}
	}
	pb.IndexStart = append(pb.IndexStart, int64(len(pb.IDs)))
	return bb
}

// benchBatches is a ring of precomputed batches; batch b uses ring[b%len].
// Sixteen is a multiple of the region count, so victims stay consistent.
var benchRing = sync.OnceValue(func() []*benchBatch {
	ring := make([]*benchBatch, 2*benchRegion)
	for i := range ring {
		ring[i] = benchWorkload(i + benchRegion) // every batch has victims
	}
	return ring
})

func benchStep(tb testing.TB, c *Checker, ring []*benchBatch, step int) {
	at := func(b int) *benchBatch { return ring[b%len(ring)] }
	// plan b = step
	w, err := at(step).pb.Writes()
	if err == nil {
		err = c.Plan(uint64(step), w)
	}
	// collect b = step−1
	if b := step - 1; err == nil && b >= 0 {
		bb := at(b)
		if err = c.ReadTriples(uint64(b), "collect", Slot, bb.pb.Victims, bb.pb.NVictims); err == nil {
			err = c.ReadTriples(uint64(b), "collect", HostRow, bb.misses, int64(len(bb.misses)/3))
		}
	}
	// insert b = step−3
	if b := step - 3; b >= 0 {
		c.Wrote(uint64(b), "insert")
	}
	// train b = step−4
	if b := step - 4; err == nil && b >= 0 {
		pb := &at(b).pb
		for t := range benchTables {
			if err = c.ReadSlots(uint64(b), "train", t, pb.Slots[pb.IndexStart[t]:pb.IndexStart[t+1]]); err != nil {
				break
			}
		}
		c.Wrote(uint64(b), "train")
		c.Done(uint64(b))
	}
	if err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkChecker is one pipeline step: one batch planned, one collected,
// one inserted, one trained, all checked. ns/op is the checker's cost per
// batch of 8 × 40960 IDs; ns/ID divides it by the batch's IDs.
func BenchmarkChecker(b *testing.B) {
	ring := benchRing()
	for _, mode := range []struct {
		name string
		new  func() *Checker
	}{
		{"dynamic", New},
		{"strict-lockstep", func() *Checker { c, _ := NewStrict(Strict{Order: pipeline}); return c }},
	} {
		b.Run(mode.name, func(b *testing.B) {
			c := mode.new()
			for step := range 2 * len(ring) { // warm: arenas and slot arrays at size
				benchStep(b, c, ring, step)
			}
			step := 2 * len(ring)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				benchStep(b, c, ring, step)
				step++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(benchTables*benchIDs), "ns/ID")
		})
	}
}

// BenchmarkGatherReduceBaseline is the work the checks sit beside: train's
// gather-reduce of the same 8 × 40960 slots (sum of 20 lookups per bag),
// in plain Go, at dim 16 (the demos) and 128 (ScratchPipe's default). The
// checker's overhead is BenchmarkChecker's ns/op over this one's.
func BenchmarkGatherReduceBaseline(b *testing.B) {
	pb := &benchRing()[0].pb
	for _, dim := range []int{16, 128} {
		b.Run("dim"+strconv.Itoa(dim), func(b *testing.B) {
			storage := make([][]float32, benchTables)
			for t := range storage {
				storage[t] = make([]float32, benchSlots*dim)
				for i := range storage[t] {
					storage[t][i] = float32(i % 7)
				}
			}
			out := make([]float32, dim)
			b.ResetTimer()
			for b.Loop() {
				for t := range benchTables {
					slots := pb.Slots[pb.IndexStart[t]:pb.IndexStart[t+1]]
					for bag := 0; bag < len(slots); bag += 20 {
						clear(out)
						for _, s := range slots[bag : bag+20] {
							row := storage[t][int(s)*dim : int(s+1)*dim]
							for j := range out {
								out[j] += row[j]
							}
						}
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(benchTables*benchIDs), "ns/ID")
		})
	}
}

// BenchmarkCheckerConcurrent runs the plan, collect and train checks of
// one step on three goroutines at once, as the stages do, to show what
// the per-table locks cost under contention.
func BenchmarkCheckerConcurrent(b *testing.B) {
	ring := benchRing()
	c := New()
	for step := range 2 * len(ring) {
		benchStep(b, c, ring, step)
	}
	at := func(x int) *benchBatch { return ring[x%len(ring)] }
	step := 2 * len(ring)
	b.ResetTimer()
	for b.Loop() {
		var wg sync.WaitGroup
		errs := make([]error, 3)
		wg.Go(func() {
			w, err := at(step).pb.Writes()
			if err == nil {
				err = c.Plan(uint64(step), w)
			}
			errs[0] = err
		})
		wg.Go(func() {
			bb := at(step - 1)
			errs[1] = c.ReadTriples(uint64(step-1), "collect", Slot, bb.pb.Victims, bb.pb.NVictims)
			if errs[1] == nil {
				errs[1] = c.ReadTriples(uint64(step-1), "collect", HostRow, bb.misses, int64(len(bb.misses)/3))
			}
		})
		wg.Go(func() {
			pb := &at(step - 4).pb
			for t := range benchTables {
				if errs[2] = c.ReadSlots(uint64(step-4), "train", t, pb.Slots[pb.IndexStart[t]:pb.IndexStart[t+1]]); errs[2] != nil {
					return
				}
			}
		})
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		c.Wrote(uint64(step-3), "insert")
		c.Wrote(uint64(step-4), "train")
		c.Done(uint64(step - 4))
		step++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(benchTables*benchIDs), "ns/ID")
}

// BenchmarkReadSlots is the slot check alone, where it costs most: a
// batch reading 8 × 20480 slots (collect's victims) while the four batches
// before it have writes pending (so no check is skipped), none to these
// slots. ns/ID is the cost of one slot check. (Train's own check is
// nearly free in a healthy pipeline: by then every earlier batch has
// trained, and a read with no earlier batch tracked returns at once.)
func BenchmarkReadSlots(b *testing.B) {
	ring := benchRing()
	c := New()
	for step := range 2*len(ring) + 1 {
		benchStep(b, c, ring, step)
	}
	seq := 2*len(ring) + 1 // batches seq−5 … seq−2 in flight, seq−1 just planned
	pb := &ring[seq%len(ring)].pb
	slots := make([][]int64, benchTables)
	for i := range pb.NVictims {
		t := pb.Victims[3*i]
		slots[t] = append(slots[t], pb.Victims[3*i+2])
	}
	b.ResetTimer()
	for b.Loop() {
		for t := range benchTables {
			if err := c.ReadSlots(uint64(seq), "collect", t, slots[t]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(pb.NVictims), "ns/ID")
}

// BenchmarkReadRows is the host-row check alone: collect's 8 × 20480
// missed rows (absent from the table of pending write-backs, as in a
// healthy run) while four batches' write-backs are pending. ns/ID is the
// cost of one row check: a probe of the open-addressing table.
func BenchmarkReadRows(b *testing.B) {
	ring := benchRing()
	c := New()
	for step := range 2*len(ring) + 1 {
		benchStep(b, c, ring, step)
	}
	seq := 2*len(ring) + 1
	bb := ring[seq%len(ring)]
	n := int64(len(bb.misses) / 3)
	b.ResetTimer()
	for b.Loop() {
		if err := c.ReadTriples(uint64(seq), "collect", HostRow, bb.misses, n); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/ID")
}
