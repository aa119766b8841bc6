package collect

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/hazard"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/stages/internal/stagetest"
)

func newCollector(t *testing.T, e *stagetest.Env) stage.Stage {
	t.Helper()
	return stagetest.MustCreate(t, NewFactory(), e.Set).(stage.Stage)
}

func arraysOf(t *testing.T, b *batch.Batch) (missIndex []int64, missRows, victimRows []float32) {
	t.Helper()
	var err error
	if missIndex, err = b.Int64s(batch.MissIndex); err != nil {
		t.Fatal(err)
	}
	if missRows, err = b.Float32s(batch.MissRows); err != nil {
		t.Fatal(err)
	}
	if victimRows, err = b.Float32s(batch.VictimRows); err != nil {
		t.Fatal(err)
	}
	return
}

// fill plays insert for the test: the staged rows go into their slots.
func fill(e *stagetest.Env, missIndex []int64, missRows []float32, n int64) {
	stride := int64(e.Set.Layout.Stride)
	for i := range n {
		t, row, slot := missIndex[3*i], missIndex[3*i+1], missIndex[3*i+2]
		e.Set.Storage.Fill(int(t), slot, row, missRows[i*stride:(i+1)*stride])
	}
}

func TestCollectStagesDistinctMissesThenVictims(t *testing.T) {
	// Small: 2 tables, 12 IDs per table per batch; 12 slots per table.
	e := stagetest.New(t, stagetest.Options{CacheRows: 12, Sequential: true})
	c := newCollector(t, e)
	dim := int64(e.Set.Layout.Dim)

	b0 := e.Batch(t, 0)
	e.SetIDs(t, b0, [][]int64{
		{5, 5, 7, 1, 2, 3, 5, 9, 10, 11, 12, 13}, // 10 distinct: 5 staged once
		{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
	})
	e.Plan(t, b0)
	stagetest.Process(t, c, b0)
	if got := b0.Stats["collected_rows"]; got != 22 {
		t.Fatalf("collected_rows = %d, want 22 (10 + 12 distinct)", got)
	}
	if got := b0.Stats["collected_victims"]; got != 0 {
		t.Fatalf("collected_victims = %d, want 0", got)
	}
	if b0.Stats["modeled_ns"] <= 0 {
		t.Errorf("modeled_ns = %d, want > 0", b0.Stats["modeled_ns"])
	}
	missIndex, missRows, _ := arraysOf(t, b0)
	var rows0 []int64
	for i := range int64(22) {
		tab, row := missIndex[3*i], missIndex[3*i+1]
		if tab == 0 {
			rows0 = append(rows0, row)
		}
		if !slices.Equal(missRows[i*dim:(i+1)*dim], e.Set.Tables.Row(int(tab), row)) {
			t.Errorf("staged row %d (table %d row %d) differs from the host row", i, tab, row)
		}
	}
	if want := []int64{5, 7, 1, 2, 3, 9, 10, 11, 12, 13}; !slices.Equal(rows0, want) {
		t.Errorf("table 0 staged rows %v, want %v (first occurrence order)", rows0, want)
	}
	fill(e, missIndex, missRows, 22)
	// Training moves the Storage copy away from the host's.
	for slot := range int64(12) {
		for i := range e.Set.Storage.Row(0, slot) {
			e.Set.Storage.Row(0, slot)[i] += 1
		}
	}

	// Batch 1: table 0 needs 12 new rows; 2 slots are free, 10 rows of
	// batch 0 are evicted. Table 1 hits everywhere.
	b1 := e.Batch(t, 1)
	e.SetIDs(t, b1, [][]int64{
		{20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31},
		{11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0},
	})
	e.Plan(t, b1)
	stagetest.Process(t, c, b1)
	if got := b1.Stats["collected_rows"]; got != 12 {
		t.Fatalf("collected_rows = %d, want 12", got)
	}
	nv := b1.Stats["collected_victims"]
	if nv != 10 {
		t.Fatalf("collected_victims = %d, want 10", nv)
	}
	victims, err := b1.Int64s(batch.Victims)
	if err != nil {
		t.Fatal(err)
	}
	_, _, victimRows := arraysOf(t, b1)
	for i := range nv {
		tab, row, slot := victims[3*i], victims[3*i+1], victims[3*i+2]
		if !slices.Equal(victimRows[i*dim:(i+1)*dim], e.Set.Storage.Row(int(tab), slot)) {
			t.Errorf("victim %d (row %d slot %d): staged values are not Storage's", i, row, slot)
		}
		if slices.Equal(victimRows[i*dim:(i+1)*dim], e.Set.Tables.Row(int(tab), row)) {
			t.Errorf("victim %d (row %d): staged the stale host row", i, row)
		}
	}
}

// A policy may evict a row and place it again in the same batch; its
// freshest values are then in Storage, not in the host table.
func TestCollectRestagesAVictimFromStorage(t *testing.T) {
	e := stagetest.New(t, stagetest.Options{CacheRows: 12, Sequential: true})
	c := newCollector(t, e)
	fresh := []float32{9, 8, 7, 6}
	e.Set.Storage.Fill(0, 0, 7, fresh)

	b := e.Batch(t, 0)
	ids := [][]int64{make([]int64, 12), make([]int64, 12)}
	slots := [][]int64{make([]int64, 12), make([]int64, 12)}
	hits := [][]byte{make([]byte, 12), make([]byte, 12)}
	for i := range 12 {
		ids[0][i], slots[0][i] = 7, 1 // row 7 moves from slot 0 to slot 1
		ids[1][i], slots[1][i] = 3, -1
	}
	e.SetIDs(t, b, ids)
	e.SetPlan(t, b, slots, hits, [][3]int64{{0, 7, 0}})
	stagetest.Process(t, c, b)
	if b.Stats["collected_rows"] != 1 || b.Stats["bypassed"] != 12 {
		t.Fatalf("collected_rows %d, bypassed %d; want 1 and 12", b.Stats["collected_rows"], b.Stats["bypassed"])
	}
	missIndex, missRows, _ := arraysOf(t, b)
	if !slices.Equal(missIndex[:3], []int64{0, 7, 1}) {
		t.Errorf("miss_index %v, want [0 7 1]", missIndex[:3])
	}
	if !slices.Equal(missRows[:4], fresh) {
		t.Errorf("staged %v, want Storage's %v", missRows[:4], fresh)
	}
}

func TestCollectRejectsAPlanStorageContradicts(t *testing.T) {
	type plan struct {
		slots   [][]int64
		hits    [][]byte
		victims [][3]int64
	}
	uniform := func(slot int64, hit byte) plan {
		p := plan{slots: [][]int64{make([]int64, 12), make([]int64, 12)}, hits: [][]byte{make([]byte, 12), make([]byte, 12)}}
		for tab := range 2 {
			for i := range 12 {
				p.slots[tab][i], p.hits[tab][i] = slot+int64(tab), hit
			}
		}
		return p
	}
	for name, tc := range map[string]struct {
		plan plan
		want string
	}{
		"slot outside Storage": {uniform(12, 0), "outside Storage"},
		"victim not resident":  {func() plan { p := uniform(0, 0); p.victims = [][3]int64{{0, 3, 5}}; return p }(), "which holds row -1"},
		"two rows, one slot": {func() plan {
			p := uniform(0, 0)
			p.slots[0] = []int64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}
			return p
		}(), "gives slot 0 to rows"},
	} {
		t.Run(name, func(t *testing.T) {
			e := stagetest.New(t, stagetest.Options{CacheRows: 12, Sequential: true})
			c := newCollector(t, e)
			b := e.Batch(t, 3)
			ids := [][]int64{make([]int64, 12), make([]int64, 12)}
			for i := range 12 {
				ids[0][i], ids[1][i] = int64(i), 40
			}
			e.SetIDs(t, b, ids)
			e.SetPlan(t, b, tc.plan.slots, tc.plan.hits, tc.plan.victims)
			err := c.Process(context.Background(), b)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "batch 3") {
				t.Fatalf("err = %v, want one naming batch 3 and %q", err, tc.want)
			}
		})
	}
}

func TestCollectNeedsStorage(t *testing.T) {
	e := stagetest.New(t, stagetest.Options{CacheRows: 12})
	if _, err := stagetest.Create(t, NewFactory(), e.Set, nil); err != nil {
		t.Errorf("pipelined: %v", err)
	}
	e = stagetest.New(t, stagetest.Options{Sequential: true})
	if _, err := stagetest.Create(t, NewFactory(), e.Set, nil); err == nil || !strings.Contains(err.Error(), "Storage") {
		t.Errorf("no Storage: err = %v", err)
	}
	e = stagetest.New(t, stagetest.Options{CacheRows: 12, Sequential: true})
	_, err := stagetest.Create(t, NewFactory(), e.Set, func(c stage.Config) { c.(*Config).StorageDevice = "tpu" })
	if err == nil || !strings.Contains(err.Error(), `"tpu"`) {
		t.Errorf("unknown device: err = %v", err)
	}
}

func TestConfig(t *testing.T) {
	c := &Config{}
	if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "device: ") {
		t.Errorf("empty device: err = %v, want it at device", err)
	}
	c = NewFactory().CreateDefaultConfig().(*Config)
	if err := c.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if got := c.DeviceNames(); !slices.Equal(got, []string{"host", "gpu"}) {
		t.Errorf("DeviceNames = %v", got)
	}
	if !c.UsesStorage() {
		t.Error("collect must ask for Storage")
	}
}

// Pipelined, the policy's Hit-Map runs ahead of Storage: a hit on a row an
// earlier batch has yet to insert is what it should be, not an error (train
// checks the row is in its slot when it uses it).
func TestCollectAcceptsAHitAheadOfStorage(t *testing.T) {
	e := stagetest.New(t, stagetest.Options{CacheRows: 12})
	c := newCollector(t, e)
	b := e.Batch(t, 4)
	ids := [][]int64{make([]int64, 12), make([]int64, 12)}
	slots := [][]int64{make([]int64, 12), make([]int64, 12)}
	hits := [][]byte{make([]byte, 12), make([]byte, 12)}
	for i := range 12 {
		ids[0][i], slots[0][i], hits[0][i] = int64(i), int64(i), 1 // every slot still empty
		ids[1][i], slots[1][i] = 40, -1
	}
	e.SetIDs(t, b, ids)
	e.SetPlan(t, b, slots, hits, nil)
	stagetest.Process(t, c, b)
	if got := b.Stats["collected_rows"]; got != 0 {
		t.Errorf("collected_rows = %d, want 0 (all hits)", got)
	}
}

// With a hazard checker, collect asks before reading a victim's slot
// (RAW 2, 3) and after staging the missed rows (RAW 4).
func TestCollectChecksHazards(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    hazard.WriteSet
		raw  int
	}{
		{"victim slot an earlier batch fills", hazard.WriteSet{Stage: "insert", Kind: hazard.Slot, Table: 0, Index: []int64{5}}, 3},
		{"victim slot an earlier batch trains", hazard.WriteSet{Stage: "train", Kind: hazard.Slot, Table: 0, Index: []int64{5}}, 2},
		{"missed row an earlier batch writes back", hazard.WriteSet{Stage: "insert", Kind: hazard.HostRow, Table: 1, Index: []int64{40}}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := stagetest.New(t, stagetest.Options{CacheRows: 12})
			hz := hazard.New()
			e.Set.Hazards = hz
			c := newCollector(t, e)
			if err := hz.Plan(2, hazard.Writes{tc.w}); err != nil {
				t.Fatal(err)
			}
			e.Set.Storage.Fill(0, 5, 7, make([]float32, e.Set.Layout.Stride))
			b := e.Batch(t, 3)
			ids := [][]int64{make([]int64, 12), make([]int64, 12)}
			slots := [][]int64{make([]int64, 12), make([]int64, 12)}
			hits := [][]byte{make([]byte, 12), make([]byte, 12)}
			for i := range 12 {
				ids[0][i], slots[0][i] = 8, 5 // row 8 replaces victim row 7 in slot 5
				ids[1][i], slots[1][i] = 40, 0
			}
			e.SetIDs(t, b, ids)
			e.SetPlan(t, b, slots, hits, [][3]int64{{0, 7, 5}})
			err := c.Process(context.Background(), b)
			var h *hazard.Hazard
			if !errors.As(err, &h) || h.RAW != tc.raw || h.Seq != 3 || h.Writer != 2 {
				t.Fatalf("err = %v, want RAW-%d by batch 2 at batch 3", err, tc.raw)
			}
			hz.Wrote(2, tc.w.Stage)
			b.SetStat("victims", 1)
			if err := c.Process(context.Background(), b); err != nil {
				t.Errorf("after batch 2 wrote: %v", err)
			}
		})
	}
}
