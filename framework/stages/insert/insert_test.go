package insert

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/stages/internal/stagetest"
)

// staged writes what collect would have staged: victims (table, row, slot)
// with their rows, and missed (table, row, slot) with theirs.
func staged(t *testing.T, e *stagetest.Env, b *batch.Batch, victims, misses [][3]int64, victimRows, missRows [][]float32) {
	t.Helper()
	v, _ := b.Int64s(batch.Victims)
	vr, _ := b.Float32s(batch.VictimRows)
	mi, _ := b.Int64s(batch.MissIndex)
	mr, err := b.Float32s(batch.MissRows)
	if err != nil {
		t.Fatal(err)
	}
	// Staged rows are whole rows, Stride floats apart.
	stride := e.Set.Layout.Stride
	for i, tr := range victims {
		copy(v[3*i:], tr[:])
		copy(vr[i*stride:], victimRows[i])
	}
	for i, tr := range misses {
		copy(mi[3*i:], tr[:])
		copy(mr[i*stride:], missRows[i])
	}
	b.SetStat("collected_victims", int64(len(victims)))
	b.SetStat("collected_rows", int64(len(misses)))
}

func newInserter(t *testing.T, e *stagetest.Env) stage.Stage {
	t.Helper()
	return stagetest.MustCreate(t, NewFactory(), e.Set).(stage.Stage)
}

func TestInsertWritesBackThenFills(t *testing.T) {
	e := stagetest.New(t, stagetest.Options{CacheRows: 4, Sequential: true})
	in := newInserter(t, e)
	st := e.Set.Storage
	trained := []float32{1, 2, 3, 4}
	st.Fill(1, 2, 30, trained) // row 30 of table 1 lives in slot 2
	st.Fill(0, 3, 8, []float32{5, 5, 5, 5})

	b := e.Batch(t, 0)
	incoming := []float32{-1, -2, -3, -4}
	staged(t, e, b,
		[][3]int64{{1, 30, 2}, {0, 8, 3}}, // both evicted
		[][3]int64{{1, 31, 2}},            // row 31 takes slot 2; slot 3 stays empty
		[][]float32{trained, {5, 5, 5, 5}}, [][]float32{incoming})
	stagetest.Process(t, in, b)

	if got := e.Set.Tables.Row(1, 30); !slices.Equal(got, trained) {
		t.Errorf("host row 30 = %v, want the written-back %v", got, trained)
	}
	if got := e.Set.Tables.Row(0, 8); !slices.Equal(got, []float32{5, 5, 5, 5}) {
		t.Errorf("host row 8 of table 0 = %v", got)
	}
	if got := st.Row(1, 2); !slices.Equal(got, incoming) || st.RowOf(1, 2) != 31 {
		t.Errorf("slot 2 holds row %d = %v, want row 31 = %v", st.RowOf(1, 2), got, incoming)
	}
	if st.RowOf(0, 3) != -1 {
		t.Errorf("slot 3 of table 0 holds row %d after its eviction, want empty", st.RowOf(0, 3))
	}
	if b.Stats["inserted_rows"] != 1 || b.Stats["written_back"] != 2 || b.Stats["modeled_ns"] <= 0 {
		t.Errorf("stats %v", b.Stats)
	}
}

func TestInsertChecksBeforeWriting(t *testing.T) {
	e := stagetest.New(t, stagetest.Options{CacheRows: 4, Sequential: true})
	in := newInserter(t, e)
	host := slices.Clone(e.Set.Tables.Row(0, 1))

	b := e.Batch(t, 5)
	staged(t, e, b,
		[][3]int64{{0, 1, 0}},
		[][3]int64{{0, 2, 4}}, // slot 4 of a 4-slot Storage
		[][]float32{{7, 7, 7, 7}}, [][]float32{{1, 1, 1, 1}})
	err := in.Process(context.Background(), b)
	if err == nil || !strings.Contains(err.Error(), "batch 5") || !strings.Contains(err.Error(), "slot 4") {
		t.Fatalf("err = %v, want batch 5 and slot 4 named", err)
	}
	if !slices.Equal(e.Set.Tables.Row(0, 1), host) {
		t.Error("a rejected batch wrote a victim back")
	}

	b = e.Batch(t, 6)
	if err := in.Process(context.Background(), b); err == nil || !strings.Contains(err.Error(), "collect") {
		t.Errorf("no collect upstream: err = %v", err)
	}
}

func TestInsertNeedsStorage(t *testing.T) {
	e := stagetest.New(t, stagetest.Options{CacheRows: 4})
	if _, err := stagetest.Create(t, NewFactory(), e.Set, nil); err != nil {
		t.Errorf("pipelined: %v", err)
	}
	e = stagetest.New(t, stagetest.Options{})
	if _, err := stagetest.Create(t, NewFactory(), e.Set, nil); err == nil || !strings.Contains(err.Error(), "Storage") {
		t.Errorf("no Storage: err = %v", err)
	}
}

func TestConfig(t *testing.T) {
	if err := (&Config{}).Validate(); err == nil || !strings.HasPrefix(err.Error(), "device: ") {
		t.Errorf("empty device: err = %v", err)
	}
	c := NewFactory().CreateDefaultConfig().(*Config)
	if err := c.Validate(); err != nil || !slices.Equal(c.DeviceNames(), []string{"gpu", "host"}) || !c.UsesStorage() {
		t.Errorf("defaults: %v, devices %v", err, c.DeviceNames())
	}
}
