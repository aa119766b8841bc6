package exchange_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/engine"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/stages/collect"
	"github.com/flowrun/flowrun/framework/stages/exchange"
	"github.com/flowrun/flowrun/framework/stages/insert"
	"github.com/flowrun/flowrun/framework/stages/internal/stagetest"
	"github.com/flowrun/flowrun/framework/stages/load"
	"github.com/flowrun/flowrun/framework/stages/plan"
	"github.com/flowrun/flowrun/framework/stages/train"
)

var adagrad = config.Embedding{Optimizer: "adagrad", Epsilon: 1e-8}

// distinctMisses counts, from the plan alone, the rows that must cross to
// the device: per table, each row the plan misses and gives a slot, once.
func distinctMisses(t *testing.T, e *stagetest.Env, b *batch.Batch) int64 {
	t.Helper()
	ids, _ := b.Int64s(batch.IDs)
	slots, _ := b.Int64s(batch.Slots)
	hits, err := b.Bytes(batch.Hits)
	if err != nil {
		t.Fatal(err)
	}
	start := e.Set.Layout.IndexStart()
	var n int64
	for tab := range e.Set.Layout.Tables {
		seen := map[int64]bool{}
		for p := start[tab]; p < start[tab+1]; p++ {
			if hits[p] == 0 && slots[p] >= 0 && !seen[ids[p]] {
				seen[ids[p]] = true
				n++
			}
		}
	}
	return n
}

// tiers is everything the cache traffic touches: the staged arrays, every
// Storage slot and the host rows a batch names.
func tiers(t *testing.T, e *stagetest.Env, b *batch.Batch) [][]float32 {
	t.Helper()
	var out [][]float32
	for _, name := range []batch.Field{batch.MissRows, batch.VictimRows} {
		v, err := b.Float32s(name)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, slices.Clone(v))
	}
	for _, name := range []batch.Field{batch.MissIndex, batch.Victims} {
		v, err := b.Int64s(name)
		if err != nil {
			t.Fatal(err)
		}
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		out = append(out, f)
	}
	st := e.Set.Storage
	for tab := range st.Len() {
		for slot := range st.Capacity {
			out = append(out, slices.Clone(st.Row(tab, slot)), []float32{float32(st.RowOf(tab, slot))})
		}
	}
	ids, _ := b.Int64s(batch.IDs)
	per := e.Set.Layout.IDsPerTable
	for i, id := range ids {
		out = append(out, slices.Clone(e.Set.Tables.Row(i/per, id)))
	}
	return out
}

// Between collect and insert, exchange charges the link for exactly the
// rows collect staged (the plan's distinct placed misses) and the victims
// it evicts, and moves nothing itself: the staged rows, Storage and the
// host tables are as collect left them, for insert to write.
func TestExchangeChargesWhatCollectStaged(t *testing.T) {
	e := stagetest.New(t, stagetest.Options{CacheRows: 12, Sequential: true, Embedding: adagrad})
	rowBytes := int64(e.Set.Layout.Stride) * 4
	if rowBytes != 32 {
		t.Fatalf("row of %d bytes, want dim 4 + 4 Adagrad accumulators", rowBytes)
	}
	create := func(f stage.Factory) stage.Stage { return stagetest.MustCreate(t, f, e.Set).(stage.Stage) }
	c, x, in := create(collect.NewFactory()), create(exchange.NewFactory()), create(insert.NewFactory())

	steps := []struct {
		ids             [][]int64
		misses, victims int64
	}{
		// 10 distinct rows of 12 lookups in table 0, 12 in table 1.
		{[][]int64{{5, 5, 7, 1, 2, 3, 5, 9, 10, 11, 12, 13}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}}, 22, 0},
		// 12 new rows in table 0: 2 free slots, 10 evictions. Table 1 hits.
		{[][]int64{{20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31}, {11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}}, 12, 10},
		// Everything hits: nothing crosses.
		{[][]int64{{31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20}, {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}}, 0, 0},
	}
	for i, step := range steps {
		b := e.Batch(t, uint64(i))
		e.SetIDs(t, b, step.ids)
		res := e.Plan(t, b)
		stagetest.Process(t, c, b)
		if got := distinctMisses(t, e, b); got != step.misses || res.Victims != step.victims {
			t.Fatalf("batch %d: plan misses %d distinct rows and evicts %d, the test expects %d and %d", i, got, res.Victims, step.misses, step.victims)
		}
		before := tiers(t, e, b)
		stagetest.Process(t, x, b)
		if got, want := b.Stats["bytes_to_device"], step.misses*rowBytes; got != want {
			t.Errorf("batch %d: %d bytes to the device, want %d (%d rows)", i, got, want, step.misses)
		}
		if got, want := b.Stats["bytes_to_host"], step.victims*rowBytes; got != want {
			t.Errorf("batch %d: %d bytes to the host, want %d (%d victims)", i, got, want, step.victims)
		}
		if (step.misses+step.victims > 0) != (b.Stats["modeled_ns"] > 0) {
			t.Errorf("batch %d: modeled %d ns for %d rows", i, b.Stats["modeled_ns"], step.misses+step.victims)
		}
		after := tiers(t, e, b)
		for j := range before {
			if !slices.Equal(before[j], after[j]) {
				t.Fatalf("batch %d: exchange changed what collect staged or a tier holds (%d: %v → %v)", i, j, before[j], after[j])
			}
		}
		stagetest.Process(t, in, b)
	}
}

// recorder is a stage kind for the graph test: it keeps what every batch
// carries when it reaches it.
type recorder struct {
	mu      sync.Mutex
	stride  int
	batches []recorded
}

type recorded struct {
	seq   uint64
	eval  bool
	stats map[string]int64
}

type recordConfig struct{}

func (*recordConfig) Validate() error { return nil }

func (r *recorder) Process(_ context.Context, b *batch.Batch) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	stats := make(map[string]int64, len(b.Stats))
	for k, v := range b.Stats {
		stats[k] = v
	}
	r.batches = append(r.batches, recorded{seq: b.Seq, eval: b.Eval, stats: stats})
	return nil
}

// In a pipelined ScratchPipe graph, every batch leaves exchange once, in
// sequence order, carrying the bytes of the rows collect staged and of the
// victims plan evicted; the run's link totals are the training batches'
// sums, and exchange's modeled time is reported.
func TestExchangeInThePipeline(t *testing.T) {
	rec := &recorder{}
	kinds, err := stage.NewRegistry(load.NewFactory(), plan.NewFactory(), collect.NewFactory(),
		exchange.NewFactory(), insert.NewFactory(), train.NewFactory(),
		stage.NewFactory("record", func() stage.Config { return &recordConfig{} },
			func(_ context.Context, set stage.Settings, _ stage.Config) (any, error) {
				rec.stride = set.Layout.Stride
				return rec, nil
			},
			// What it checks below: exchange's bytes, which the graph
			// must place upstream of it.
			stage.WithFields(nil, []batch.Field{exchange.BytesToDevice, exchange.BytesToHost})))
	if err != nil {
		t.Fatal(err)
	}
	res, err := stagetest.RunGraph(t, kinds, "testdata/recorded.yaml", engine.HazardsOff)
	if err != nil {
		t.Fatal(err)
	}
	const rowBytes = (8 + 1) * 4 // row-wise Adagrad: dim values and one accumulator
	if rec.stride*4 != rowBytes {
		t.Fatalf("rows of %d floats, the graph should make them %d bytes", rec.stride, rowBytes)
	}

	const batches, evals = 24, 3
	var seqs []uint64
	var toDevice, toHost, missed, evicted int64
	for _, r := range rec.batches {
		seqs = append(seqs, r.seq)
		s := r.stats
		if s["bytes_to_device"] != s["collected_rows"]*rowBytes || s["bytes_to_host"] != s["victims"]*rowBytes {
			t.Errorf("batch %d: %d and %d bytes for %d staged rows and %d victims", r.seq,
				s["bytes_to_device"], s["bytes_to_host"], s["collected_rows"], s["victims"])
		}
		if r.eval != (r.seq >= batches) {
			t.Errorf("batch %d: eval %t", r.seq, r.eval)
		}
		if !r.eval {
			toDevice += s["bytes_to_device"]
			toHost += s["bytes_to_host"]
			missed += s["collected_rows"]
			evicted += s["victims"]
		}
	}
	want := make([]uint64, batches+evals)
	for i := range want {
		want[i] = uint64(i)
	}
	if !slices.Equal(seqs, want) {
		t.Fatalf("batches left exchange in the order %v, want %v", seqs, want)
	}
	if missed == 0 || evicted == 0 {
		t.Fatalf("%d rows staged, %d evicted: the graph should make both cross", missed, evicted)
	}
	if res.Cache == nil || res.Cache.LinkBytes["to_device"] != toDevice || res.Cache.LinkBytes["to_host"] != toHost {
		t.Errorf("results' link bytes %+v, want to_device %d and to_host %d", res.Cache, toDevice, toHost)
	}
	found := false
	for _, s := range res.Stages {
		if s.Name != "exchange" {
			continue
		}
		found = true
		if s.Batches != batches+evals || s.ModeledMs == nil || s.ModeledMs.Max <= 0 {
			t.Errorf("exchange: %d batches, modeled %+v", s.Batches, s.ModeledMs)
		}
	}
	if !found {
		t.Errorf("results list no stage exchange: %+v", res.Stages)
	}
}

// An exchange with no plan stage upstream is refused when the graph is
// built, naming the stage and the count it lacks, not per batch at run
// time.
func TestExchangeWithoutAPlanIsRefused(t *testing.T) {
	kinds, err := stage.NewRegistry(load.NewFactory(), exchange.NewFactory(), train.NewFactory())
	if err != nil {
		t.Fatal(err)
	}
	_, err = stagetest.RunGraph(t, kinds, "testdata/no-plan.yaml", engine.HazardsOff)
	for _, want := range []string{
		`no-plan.yaml:31: stages::exchange::in: stage "exchange" consumes stat "misses": no stage upstream produces it`,
		`stages::exchange::in: stage "exchange" consumes stat "victims": no stage upstream produces it`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want one containing %q", err, want)
		}
	}
}
