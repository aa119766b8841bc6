package hazard

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

// asHazard fails the test unless err is a *Hazard.
func asHazard(t *testing.T, err error) *Hazard {
	t.Helper()
	var h *Hazard
	if !errors.As(err, &h) {
		t.Fatalf("want a *Hazard, got %v", err)
	}
	return h
}

func mustPlan(t *testing.T, c *Checker, seq uint64, w ...WriteSet) {
	t.Helper()
	if err := c.Plan(seq, w); err != nil {
		t.Fatal(err)
	}
}

// A pipelined interleaving: batch 5 has been planned to train slot 1234
// of table 3 (row 55); batch 7 chose that slot as a victim and its
// collect reads it out while 5 has not trained yet.
func TestRAW2VictimStillTraining(t *testing.T) {
	c := New()
	mustPlan(t, c, 5, WriteSet{Stage: "train", Kind: Slot, Table: 3, Index: []int64{9, 1234, 1234}, Rows: []int64{8, 55, 55}})
	mustPlan(t, c, 7, WriteSet{Stage: "insert", Kind: Slot, Table: 3, Index: []int64{1234}, Rows: []int64{77}})
	err := c.ReadSlots(7, "collect", 3, []int64{1, 1234})
	h := asHazard(t, err)
	want := Hazard{Seq: 7, Stage: "collect", Kind: Slot, Table: 3, Index: 1234, Row: 55, Writer: 5, WriterStage: "train", RAW: 2, InFlight: true}
	if *h != want {
		t.Fatalf("hazard %+v, want %+v", *h, want)
	}
	if got, msg := err.Error(), "hazard RAW-2: batch 7 collect reads slot 1234 of table 3 (row 55) that batch 5 has yet to write at train"; got != msg {
		t.Fatalf("message %q, want %q", got, msg)
	}
	// Once 5 has trained, 7 may read the slot.
	c.Wrote(5, "train")
	if err := c.ReadSlots(7, "collect", 3, []int64{1234}); err != nil {
		t.Fatalf("after train retired batch 5: %v", err)
	}
}

func TestRAW3FillBeforeCollect(t *testing.T) {
	c := New()
	mustPlan(t, c, 2, WriteSet{Stage: "insert", Kind: Slot, Table: 0, Index: []int64{40}, Rows: []int64{400}})
	mustPlan(t, c, 3)
	// Collect names the row it expects in the slot (its victim triple).
	err := c.ReadTriples(3, "collect/collect", Slot, []int64{0, 401, 40}, 1)
	h := asHazard(t, err)
	if h.RAW != 3 || h.Writer != 2 || h.WriterStage != "insert" || h.Row != 401 || h.Index != 40 {
		t.Fatalf("hazard %+v", *h)
	}
	if msg := "hazard RAW-3: batch 3 collect/collect reads slot 40 of table 0 (row 401) that batch 2 has yet to write at insert"; err.Error() != msg {
		t.Fatalf("message %q, want %q", err.Error(), msg)
	}
	c.Wrote(2, "insert/insert")
	if err := c.ReadTriples(3, "collect", Slot, []int64{0, 401, 40}, 1); err != nil {
		t.Fatal(err)
	}
}

func TestRAW4WriteBackBeforeCollect(t *testing.T) {
	c := New()
	mustPlan(t, c, 10, WriteSet{Stage: "insert", Kind: HostRow, Table: 1, Index: []int64{123456}})
	// Batch 11 missed row 123456 and gathers it from the host table,
	// which still holds the copy from before batch 10 evicted it.
	err := c.ReadTriples(11, "collect", HostRow, []int64{0, 5, 9, 1, 123456, 17}, 2)
	h := asHazard(t, err)
	if h.RAW != 4 || h.Kind != HostRow || h.Table != 1 || h.Index != 123456 || h.Row != 123456 || h.Writer != 10 {
		t.Fatalf("hazard %+v", *h)
	}
	if msg := "hazard RAW-4: batch 11 collect reads row 123456 of table 1 that batch 10 has yet to write back at insert"; err.Error() != msg {
		t.Fatalf("message %q, want %q", err.Error(), msg)
	}
	if err := c.ReadRows(11, "collect", 0, []int64{123456}); err != nil {
		t.Fatalf("another table's row: %v", err)
	}
	c.Wrote(10, "insert")
	if err := c.ReadRows(11, "collect", 1, []int64{123456}); err != nil {
		t.Fatal(err)
	}
}

func TestRAW1TrainReadsUntrainedSlot(t *testing.T) {
	c := New()
	mustPlan(t, c, 0, WriteSet{Stage: "train", Kind: Slot, Table: 0, Index: []int64{3}})
	mustPlan(t, c, 1, WriteSet{Stage: "train", Kind: Slot, Table: 0, Index: []int64{3}})
	h := asHazard(t, c.ReadSlots(1, "train", 0, []int64{3}))
	if h.RAW != 1 || h.Row != -1 {
		t.Fatalf("hazard %+v", *h)
	}
	if msg := "hazard RAW-1: batch 1 train reads slot 3 of table 0 that batch 0 has yet to write at train"; h.Error() != msg {
		t.Fatalf("message %q, want %q", h.Error(), msg)
	}
}

// Reads never fire on the reader's own pending writes (program order) nor
// on later batches' (planned ahead: write-after-read).
func TestOwnAndLaterWritesDoNotFire(t *testing.T) {
	c := New()
	for seq := uint64(4); seq <= 6; seq++ {
		mustPlan(t, c, seq,
			WriteSet{Stage: "insert", Kind: Slot, Table: 0, Index: []int64{1}},
			WriteSet{Stage: "train", Kind: Slot, Table: 0, Index: []int64{1}},
			WriteSet{Stage: "insert", Kind: HostRow, Table: 0, Index: []int64{1}})
	}
	if err := c.ReadSlots(4, "collect", 0, []int64{1}); err != nil {
		t.Fatal(err)
	}
	if err := c.ReadRows(4, "collect", 0, []int64{1}); err != nil {
		t.Fatal(err)
	}
	// The oldest pending writer is the one named.
	if h := asHazard(t, c.ReadSlots(6, "collect", 0, []int64{1})); h.Writer != 4 || h.RAW != 3 {
		t.Fatalf("hazard %+v: want the oldest writer, batch 4 at insert", *h)
	}
}

func TestUnnumberedRAW(t *testing.T) {
	c := New()
	mustPlan(t, c, 0, WriteSet{Stage: "insert", Kind: Slot, Table: 0, Index: []int64{2}})
	h := asHazard(t, c.ReadSlots(1, "train", 0, []int64{2}))
	if h.RAW != 0 || h.Error() != "hazard RAW: batch 1 train reads slot 2 of table 0 that batch 0 has yet to write at insert" {
		t.Fatalf("%+v: %v", *h, h)
	}
}

func TestSkipsNegativeAndUnknown(t *testing.T) {
	c := New()
	mustPlan(t, c, 0, WriteSet{Stage: "train", Kind: Slot, Table: 0, Index: []int64{-1, 0}})
	for _, err := range []error{
		c.ReadSlots(1, "collect", 0, []int64{-1, 5, 1 << 40}),
		c.ReadSlots(1, "collect", 9, []int64{0}),
		c.ReadSlots(1, "collect", -1, []int64{0}),
		c.ReadRows(1, "collect", 0, []int64{0}),
		c.ReadTriples(1, "collect", Slot, []int64{-3, 0, 0, 7, 0, 0, 0, 0, -1}, 3),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if c.Pending() != 1 {
		t.Fatalf("pending %d, want 1 (the negative slot is skipped)", c.Pending())
	}
	c.Wrote(0, "nonesuch") // an unknown stage is a no-op
	c.Wrote(0, "insert")   // nothing declared at insert
	if c.Pending() != 1 {
		t.Fatalf("pending %d, want 1", c.Pending())
	}
}

func TestPlanRejects(t *testing.T) {
	c := New()
	for i, w := range []WriteSet{
		{Stage: "train", Kind: 0, Index: []int64{1}},
		{Stage: "train", Kind: Slot, Table: -1, Index: []int64{1}},
		{Stage: "train", Kind: Slot, Table: maxTables, Index: []int64{1}},
		{Stage: "", Kind: Slot, Index: []int64{1}},
		{Stage: "/x", Kind: Slot, Index: []int64{1}},
		{Stage: "train", Kind: Slot, Index: []int64{1, 2}, Rows: []int64{1}},
		{Stage: "train", Kind: Slot, Index: []int64{maxSlot}},
	} {
		if err := c.Plan(1, Writes{{Stage: "insert", Kind: Slot, Index: []int64{1}}, w}); err == nil {
			t.Errorf("write set %d %+v: no error", i, w)
		}
	}
	if c.Pending() != 0 {
		t.Fatalf("a rejected plan recorded %d writes", c.Pending())
	}
	if err := c.ReadTriples(0, "collect", Slot, []int64{1, 2}, 1); err == nil {
		t.Error("short triples: no error")
	}
	if err := c.ReadTriples(0, "collect", 0, nil, 0); err == nil {
		t.Error("unknown kind: no error")
	}
}

// Retiring clears exactly the (batch, stage) retired; Done drops what a
// batch declared and never wrote.
func TestRetire(t *testing.T) {
	c := New()
	mustPlan(t, c, 0,
		WriteSet{Stage: "insert", Kind: Slot, Table: 0, Index: []int64{1, 2, 2}},
		WriteSet{Stage: "train", Kind: Slot, Table: 0, Index: []int64{1, 2, 3, 3}},
		WriteSet{Stage: "insert", Kind: HostRow, Table: 1, Index: []int64{70, 71}})
	if got := c.Pending(); got != 7 {
		t.Fatalf("pending %d, want 7", got)
	}
	c.Wrote(0, "insert")
	if got := c.Pending(); got != 3 {
		t.Fatalf("pending %d after insert, want 3", got)
	}
	if err := c.ReadRows(1, "collect", 1, []int64{70, 71}); err != nil {
		t.Fatal(err)
	}
	if h := asHazard(t, c.ReadSlots(1, "collect", 0, []int64{2})); h.WriterStage != "train" {
		t.Fatalf("%v", h)
	}
	c.Done(0)
	if got := c.Pending(); got != 0 {
		t.Fatalf("pending %d after Done, want 0", got)
	}
	if err := c.ReadSlots(1, "collect", 0, []int64{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
}

// A long sequential run stays at the size of one batch: lists are reused
// and ring positions freed.
func TestArenaReuse(t *testing.T) {
	c := New()
	for seq := range uint64(100) {
		mustPlan(t, c, seq, WriteSet{Stage: "train", Kind: Slot, Table: 0, Index: []int64{int64(seq % 7), 100}})
		if err := c.ReadSlots(seq, "train", 0, []int64{int64(seq % 7), 100}); err != nil {
			t.Fatal(err)
		}
		c.Wrote(seq, "train")
	}
	s := c.shard(0)
	if len(s.lists) != 0 || len(s.spare) > 2 || len(s.slots) > 2*101 || c.used != 0 {
		t.Fatalf("after the run: %d lists, %d spare, %d slot words, ring %b", len(s.lists), len(s.spare), len(s.slots), c.used)
	}
}

const (
	simBatches = 60
	simTables  = 2
	simIDs     = 48
	simRows    = 5000
	simCap     = 160
)

func simTrace() [][][]int64 { return trace(1, simBatches, simTables, simIDs, simRows) }

// Sequential execution never fires, whatever the windows: each batch's
// writes are done before the next batch reads.
func TestSequentialNeverFires(t *testing.T) {
	tr := simTrace()
	for _, w := range [][2]int{{0, 0}, {3, 2}} {
		c := New()
		if err := sequential(c, newPlanner(tr, simCap, w[0], w[1]), simBatches); err != nil {
			t.Fatalf("windows %v: %v", w, err)
		}
		if c.Pending() != 0 {
			t.Fatalf("windows %v: %d writes left pending", w, c.Pending())
		}
	}
	// Strict with depth 1 (one batch in flight) is the same promise.
	c, err := NewStrict(Strict{Order: pipeline, Depth: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := sequential(c, newPlanner(tr, simCap, 0, 0), simBatches); err != nil {
		t.Fatal(err)
	}
	if c.Pending() != 0 || c.Retained() != 0 {
		t.Fatalf("pending %d, retained %d", c.Pending(), c.Retained())
	}
}

// ScratchPipe's windows (past 3, future 2) make the lockstep pipeline
// hazard-free; taking them away makes it fire, with the RAW the missing
// window protects against.
func TestLockstepWindows(t *testing.T) {
	tr := simTrace()
	for _, tc := range []struct {
		past, future int
		raw          []int // acceptable RAW numbers; nil: no hazard
	}{
		{3, 2, nil},
		{4, 3, nil},
		{0, 0, []int{2, 3, 4}},
		{0, 2, []int{2, 3}},
		{2, 2, []int{2}}, // train is 3 steps after collect: past 2 is one short
		{3, 0, []int{4}},
		{3, 1, []int{4}}, // insert is 2 steps after collect: future 1 is one short
	} {
		t.Run(fmt.Sprintf("past%d-future%d", tc.past, tc.future), func(t *testing.T) {
			dyn, strict := New(), mustStrict(t, Strict{Order: pipeline})
			err := lockstep(dyn, newPlanner(tr, simCap, tc.past, tc.future), simBatches)
			// Strict lockstep sees the same hazards in a sequential run.
			serr := sequential(strict, newPlanner(tr, simCap, tc.past, tc.future), simBatches)
			if tc.raw == nil {
				if err != nil || serr != nil {
					t.Fatalf("lockstep: %v; strict: %v", err, serr)
				}
				if dyn.Pending() != 0 || strict.Pending() != 0 {
					t.Fatalf("left pending: %d, strict %d", dyn.Pending(), strict.Pending())
				}
				return
			}
			h, sh := asHazard(t, err), asHazard(t, serr)
			t.Logf("lockstep: %v", h)
			t.Logf("strict:   %v", sh)
			if !contains(tc.raw, h.RAW) || !h.InFlight || h.Seq <= h.Writer {
				t.Fatalf("lockstep hazard %+v, want RAW in %v", *h, tc.raw)
			}
			if !contains(tc.raw, sh.RAW) || sh.InFlight {
				t.Fatalf("strict hazard %+v, want RAW in %v, not in flight", *sh, tc.raw)
			}
			// The same first hazard: strict lockstep is the lockstep
			// interleaving decided from the plan alone.
			sh.InFlight = true
			if *sh != *h {
				t.Fatalf("strict %+v differs from lockstep %+v", *sh, *h)
			}
		})
	}
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func mustStrict(t *testing.T, cfg Strict) *Checker {
	t.Helper()
	c, err := NewStrict(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A write at train by batch 0, read at collect by later batches: which
// reads the pipeline's capacity leaves unordered.
func TestStrictCapacity(t *testing.T) {
	for _, tc := range []struct {
		cfg   Strict
		fires uint64 // reads by batches 1..fires are hazards
	}{
		{Strict{}, 3},                   // lockstep: train is 3 stages after collect
		{Strict{Queue: 2}, 9},           // 3 stages, 1 + 2 batches each
		{Strict{Queue: 2, Depth: 8}, 7}, // the pool admits batch 8 only once 0 left
		{Strict{Depth: 1}, 0},           // sequential
	} {
		t.Run(fmt.Sprintf("queue%d-depth%d", tc.cfg.Queue, tc.cfg.Depth), func(t *testing.T) {
			tc.cfg.Order = pipeline
			c := mustStrict(t, tc.cfg)
			mustPlan(t, c, 0, WriteSet{Stage: "train", Kind: Slot, Table: 0, Index: []int64{9}})
			c.Wrote(0, "train")
			for seq := uint64(1); seq <= 12; seq++ {
				err := c.ReadSlots(seq, "collect", 0, []int64{9})
				if fire := seq <= tc.fires; fire != (err != nil) {
					t.Fatalf("batch %d: %v", seq, err)
				}
				if err != nil {
					if h := asHazard(t, err); h.InFlight || h.RAW != 2 {
						t.Fatalf("%+v", *h)
					}
				}
				// Train after train is ordered: never a hazard once written.
				if err := c.ReadSlots(seq, "train", 0, []int64{9}); err != nil {
					t.Fatalf("train read: %v", err)
				}
			}
			want := "hazard RAW-2: batch 1 collect reads slot 9 of table 0 that batch 0 writes at train, and nothing in the pipeline orders that write before this read"
			if err := c.ReadSlots(1, "collect", 0, []int64{9}); tc.fires > 0 && err.Error() != want {
				t.Fatalf("message %q, want %q", err.Error(), want)
			}
			// The retained write goes once every batch it could conflict
			// with is done.
			for seq := uint64(0); seq <= c.window; seq++ {
				if c.Retained() != 1 {
					t.Fatalf("released before batch %d was done", seq)
				}
				c.Done(seq)
			}
			if c.Retained() != 0 {
				t.Fatalf("retained %d after batches 0..%d are done", c.Retained(), c.window)
			}
		})
	}
}

// flowrun's runtime queues batches between stages: with one batch queued
// per edge, the windows the lockstep pipeline needs (3, 2) are too short,
// and 3·2, 2·2 are enough.
func TestStrictQueuedWindows(t *testing.T) {
	tr := simTrace()
	const capacity = 400
	for _, tc := range []struct {
		past, future int
		fire         bool
	}{{3, 2, true}, {6, 4, false}} {
		c := mustStrict(t, Strict{Order: pipeline, Queue: 1})
		err := sequential(c, newPlanner(tr, capacity, tc.past, tc.future), simBatches)
		if tc.fire != (err != nil) {
			t.Fatalf("windows %d/%d: %v", tc.past, tc.future, err)
		}
		if err != nil {
			t.Logf("windows %d/%d: %v", tc.past, tc.future, err)
		}
	}
}

func TestStrictRejects(t *testing.T) {
	for _, cfg := range []Strict{
		{}, {Order: []string{"a", "a"}}, {Order: []string{"a", ""}}, {Order: []string{"a"}, Queue: -1},
		{Order: []string{"a"}, Depth: -1}, {Order: pipeline, Queue: 20},
	} {
		if _, err := NewStrict(cfg); err == nil {
			t.Errorf("NewStrict(%+v): no error", cfg)
		}
	}
	if _, err := NewStrict(Strict{Order: pipeline, Queue: 20, Depth: 10}); err != nil {
		t.Errorf("a depth bounds the window: %v", err)
	}
	c := mustStrict(t, Strict{Order: pipeline})
	if err := c.Plan(0, Writes{{Stage: "cast", Kind: Slot, Index: []int64{1}}}); !errors.Is(err, ErrNotInOrder) {
		t.Fatalf("plan by a stage outside the order: %v", err)
	}
	if err := c.ReadSlots(0, "cast", 0, []int64{1}); !errors.Is(err, ErrNotInOrder) {
		t.Fatalf("read by a stage outside the order: %v", err)
	}
	if err := c.ReadTriples(0, "cast", Slot, nil, 0); !errors.Is(err, ErrNotInOrder) {
		t.Fatalf("read by a stage outside the order: %v", err)
	}
}

// Stage goroutines connected by channels, as the runtime runs them, with
// ScratchPipe's windows and enough slack between stages to stay within
// them only by the lockstep hand-off: no hazard, and nothing left. Run
// with -race.
func TestConcurrentStages(t *testing.T) {
	tr := simTrace()
	c := New()
	p := newPlanner(tr, simCap, 3, 2)
	type item struct {
		seq uint64
		pb  planned
	}
	// Unbuffered hand-offs and a token that bounds the batches between
	// collect and train to 3 keep the real interleaving within the
	// windows.
	toCollect, toInsert, toTrain := make(chan item), make(chan item), make(chan item)
	slots := make(chan struct{}, 3)
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	wg.Add(4)
	go func() {
		defer wg.Done()
		defer close(toCollect)
		for b := range simBatches {
			pb, err := p.plan(b)
			if err == nil {
				var w Writes
				if w, err = pb.Writes(); err == nil {
					err = c.Plan(uint64(b), w)
				}
			}
			if err != nil {
				errs <- err
				return
			}
			toCollect <- item{uint64(b), pb}
		}
	}()
	go func() {
		defer wg.Done()
		defer close(toInsert)
		for it := range toCollect {
			slots <- struct{}{}
			if err := collectReads(c, it.seq, it.pb); err != nil {
				errs <- err
			}
			toInsert <- it
		}
	}()
	go func() {
		defer wg.Done()
		defer close(toTrain)
		for it := range toInsert {
			c.Wrote(it.seq, "insert")
			toTrain <- it
		}
	}()
	go func() {
		defer wg.Done()
		for it := range toTrain {
			if err := trainReads(c, it.seq, it.pb); err != nil {
				errs <- err
			}
			c.Wrote(it.seq, "train")
			c.Done(it.seq)
			<-slots
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if c.Pending() != 0 {
		t.Fatalf("%d writes left pending", c.Pending())
	}
}
