package train

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/stages/internal/stagetest"
)

// place does collect's and insert's work for a test: every row the plan
// gave a slot is copied from the host table into Storage, unless the slot
// already holds it.
func place(t *testing.T, e *stagetest.Env, b *batch.Batch) {
	t.Helper()
	ids, _ := b.Int64s(batch.IDs)
	slots, _ := b.Int64s(batch.Slots)
	l := e.Set.Layout
	for p := range l.Tables * l.IDsPerTable {
		tab, slot := p/l.IDsPerTable, slots[p]
		if slot >= 0 && e.Set.Storage.RowOf(tab, slot) != ids[p] {
			if old := e.Set.Storage.RowOf(tab, slot); old >= 0 {
				copy(e.Set.Tables.Row(tab, old), e.Set.Storage.Row(tab, slot))
			}
			e.Set.Storage.Fill(tab, slot, ids[p], e.Set.Tables.Row(tab, ids[p]))
		}
	}
}

// sameRowsAfterFlush writes cached's Storage back to its host tables and
// checks that every row equals host's.
func sameRowsAfterFlush(t *testing.T, host, cached *stagetest.Env) {
	t.Helper()
	if _, err := cached.Set.Storage.Flush(cached.Set.Tables); err != nil {
		t.Fatal(err)
	}
	for tab := range host.Set.Tables.Len() {
		for r := range host.Set.Tables.Rows {
			if !slices.Equal(host.Set.Tables.Row(tab, r), cached.Set.Tables.Row(tab, r)) {
				t.Fatalf("table %d row %d differs after write-back", tab, r)
			}
		}
	}
}

func newTrainStage(t *testing.T, e *stagetest.Env, source string) stage.Stage {
	t.Helper()
	s, err := stagetest.Create(t, NewFactory(), e.Set, func(c stage.Config) { c.(*Config).Source = source })
	if err != nil {
		t.Fatal(err)
	}
	return s.(stage.Stage)
}

// Training in Storage by slot gives the bits of training in the host
// tables by row: same scores, same losses, same rows once written back.
func TestStorageSourceTrainsLikeHost(t *testing.T) {
	host := stagetest.New(t, stagetest.Options{CacheRows: 16, Sequential: true})
	cached := stagetest.New(t, stagetest.Options{CacheRows: 16, Sequential: true})
	onHost := newTrainStage(t, host, SourceHost)
	onStorage := newTrainStage(t, cached, SourceStorage)
	for seq := range uint64(6) {
		bh, bs := host.Batch(t, seq), cached.Batch(t, seq)
		host.Load(t, bh)
		cached.Load(t, bs)
		cached.Plan(t, bs)
		place(t, cached, bs)
		stagetest.Process(t, onHost, bh)
		stagetest.Process(t, onStorage, bs)
		sh, _ := bh.Float32s(batch.Scores)
		ss, _ := bs.Float32s(batch.Scores)
		if !slices.Equal(sh, ss) {
			t.Fatalf("batch %d: scores differ", seq)
		}
		if bs.Stats["modeled_ns"] <= 0 {
			t.Errorf("batch %d: no modeled time", seq)
		}
	}
	sameRowsAfterFlush(t, host, cached)
	if !slices.Equal(host.Set.Metrics.Series("loss"), cached.Set.Metrics.Series("loss")) {
		t.Error("loss curves differ")
	}
}

// Rows the policy leaves without a slot (slot -1) train in their host
// table, the others in Storage (ScratchPipe's Fig. 4b), and the bits are
// those of training everything on the host.
func TestStorageSourceTrainsBypassedRowsOnHost(t *testing.T) {
	// 4 slots per table for a batch of 12 lookups over a 64-row table:
	// LRU bypasses what does not fit.
	host := stagetest.New(t, stagetest.Options{CacheRows: 4, Sequential: true})
	cached := stagetest.New(t, stagetest.Options{CacheRows: 4, Sequential: true})
	onHost := newTrainStage(t, host, SourceHost)
	onStorage := newTrainStage(t, cached, SourceStorage)
	bypassed := 0
	for seq := range uint64(6) {
		bh, bs := host.Batch(t, seq), cached.Batch(t, seq)
		host.Load(t, bh)
		cached.Load(t, bs)
		cached.Plan(t, bs)
		slots, _ := bs.Int64s(batch.Slots)
		for _, s := range slots[:cached.Set.Layout.Tables*cached.Set.Layout.IDsPerTable] {
			if s < 0 {
				bypassed++
			}
		}
		place(t, cached, bs)
		stagetest.Process(t, onHost, bh)
		stagetest.Process(t, onStorage, bs)
		sh, _ := bh.Float32s(batch.Scores)
		ss, _ := bs.Float32s(batch.Scores)
		if !slices.Equal(sh, ss) {
			t.Fatalf("batch %d: scores differ", seq)
		}
	}
	if bypassed == 0 {
		t.Fatal("no lookup bypassed the cache: the mixed path went untested")
	}
	sameRowsAfterFlush(t, host, cached)
}

// A slot that does not hold the row the plan put there fails the batch:
// in a pipelined graph this is where the Hit-Map is held to Storage.
func TestStorageSourceRejectsARowNotInItsSlot(t *testing.T) {
	e := stagetest.New(t, stagetest.Options{CacheRows: 16, Sequential: true})
	s := newTrainStage(t, e, SourceStorage)
	b := e.Batch(t, 3)
	e.Load(t, b)
	e.Plan(t, b) // nothing inserted: every slot is empty
	err := s.Process(context.Background(), b)
	if err == nil || !strings.Contains(err.Error(), "batch 3: table 0") || !strings.Contains(err.Error(), "which holds row -1") {
		t.Fatalf("err = %v, want batch 3, table 0 and the empty slot named", err)
	}
}

func TestStorageSourceNeeds(t *testing.T) {
	e := stagetest.New(t, stagetest.Options{Sequential: true})
	src := func(c stage.Config) { c.(*Config).Source = SourceStorage }
	if _, err := stagetest.Create(t, NewFactory(), e.Set, src); err == nil || !strings.Contains(err.Error(), "Storage") {
		t.Errorf("no Storage: err = %v", err)
	}
	e = stagetest.New(t, stagetest.Options{CacheRows: 8})
	if _, err := stagetest.Create(t, NewFactory(), e.Set, src); err != nil {
		t.Errorf("pipelined: %v", err)
	}
	c := NewFactory().CreateDefaultConfig().(*Config)
	if c.Source != SourceHost || c.UsesStorage() {
		t.Errorf("default source %q", c.Source)
	}
	c.Source = "disk"
	if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "source: ") {
		t.Errorf("source disk: err = %v", err)
	}
}
