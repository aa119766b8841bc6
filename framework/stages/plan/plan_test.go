package plan

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
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/region"
)

// recording wraps a policy and keeps what each request showed of the
// future.
type recording struct {
	cache.Cache
	mapper region.Mapper
	future map[uint64][]uint64 // batch → future batches' sequence numbers
	first  map[uint64][]int64  // future batch → its first ID, as sent
}

func (r *recording) Plan(ctx context.Context, req *cache.PlanRequest) (*cache.PlanResult, error) {
	for _, w := range req.Future {
		r.future[req.Seq] = append(r.future[req.Seq], w.Seq)
		b, err := r.mapper.Bytes(w.IDs)
		if err != nil {
			return nil, err
		}
		r.first[w.Seq] = append(r.first[w.Seq], region.Int64s(b)[0])
	}
	return r.Cache.Plan(ctx, req)
}

func newPlanner(t *testing.T, e *stagetest.Env) *planner {
	t.Helper()
	return stagetest.MustCreate(t, NewFactory(), e.Set).(*planner)
}

// Plan sends each batch's request with the IDs of the batches the runtime
// showed it, and looks ahead by future_window.
func TestPlanSendsTheFutureWindow(t *testing.T) {
	e := stagetest.New(t, stagetest.Options{CacheRows: 16})
	rec := &recording{Cache: e.Set.Cache, future: map[uint64][]uint64{}, first: map[uint64][]int64{}}
	t.Cleanup(func() { rec.mapper.Close() })
	e.Set.Cache = rec
	p := newPlanner(t, e)
	if p.Lookahead() != DefaultFutureWindow {
		t.Fatalf("Lookahead %d, want %d", p.Lookahead(), DefaultFutureWindow)
	}
	bs := make([]*batch.Batch, 4)
	for i := range bs {
		bs[i] = e.Batch(t, uint64(i))
		e.Load(t, bs[i])
	}
	for i := range bs {
		next := bs[i+1 : min(i+3, len(bs))]
		if err := p.ProcessAhead(context.Background(), bs[i], next); err != nil {
			t.Fatal(err)
		}
		if got := bs[i].Stats["future"]; got != int64(len(next)) {
			t.Errorf("batch %d: future stat %d, want %d", i, got, len(next))
		}
	}
	want := map[uint64][]uint64{0: {1, 2}, 1: {2, 3}, 2: {3}}
	for seq := range uint64(4) {
		if !slices.Equal(rec.future[seq], want[seq]) {
			t.Errorf("batch %d planned with future %v, want %v", seq, rec.future[seq], want[seq])
		}
	}
	ids, _ := bs[3].Int64s(batch.IDs)
	if got := rec.first[3]; len(got) != 2 || got[0] != ids[0] || got[1] != ids[0] {
		t.Errorf("batch 3's IDs as sent: %v, want its first ID %d twice", got, ids[0])
	}
	if err := p.ProcessAhead(context.Background(), bs[1], bs[:1]); err == nil {
		t.Error("a future batch before the planned one was accepted")
	}
}

// With a device, plan charges the index's work to it: a modeled time per
// batch that grows with the IDs and the future window, recorded as the
// stage's modeled_ns and under the device for the modeled clock. Without
// one it charges nothing.
func TestPlanChargesItsDevice(t *testing.T) {
	// plan charges batch 0 of a fresh environment, with or without a
	// device and a future window of batch 1.
	charge := func(device string, future bool) *batch.Batch {
		e := stagetest.New(t, stagetest.Options{CacheRows: 16})
		s, err := stagetest.Create(t, NewFactory(), e.Set, func(c stage.Config) { c.(*Config).Device = device })
		if err != nil {
			t.Fatal(err)
		}
		b, next := e.Batch(t, 0), e.Batch(t, 1)
		e.Load(t, b)
		e.Load(t, next)
		var ahead []*batch.Batch
		if future {
			ahead = append(ahead, next)
		}
		if err := s.(*planner).ProcessAhead(context.Background(), b, ahead); err != nil {
			t.Fatal(err)
		}
		return b
	}
	if b := charge("", false); b.Stats["modeled_ns"] != 0 || b.Stats[stage.DeviceStat("gpu")] != 0 {
		t.Errorf("plan without a device charged %v", b.Stats)
	}
	b := charge("gpu", false)
	alone := b.Stats["modeled_ns"]
	if alone <= 0 || b.Stats[stage.DeviceStat("gpu")] != alone {
		t.Fatalf("modeled %d ns, gpu %d ns: want the same figure > 0", alone, b.Stats[stage.DeviceStat("gpu")])
	}
	if ahead := charge("gpu", true).Stats["modeled_ns"]; ahead <= alone {
		t.Errorf("with a future window of one batch %d ns, without %d ns: want more", ahead, alone)
	}
	if got := (&Config{Device: "gpu"}).DeviceNames(); !slices.Equal(got, []string{"gpu"}) {
		t.Errorf("device names %v", got)
	}
}

// With a hazard checker, plan declares the batch's writes: insert's fills
// and write-backs, train's slots, and train's host rows for a bypass.
func TestPlanDeclaresWrites(t *testing.T) {
	// 4 slots for 12 lookups per table: LRU bypasses the rest.
	e := stagetest.New(t, stagetest.Options{CacheRows: 4})
	hz := hazard.New()
	e.Set.Hazards = hz
	p := newPlanner(t, e)
	b0 := e.Batch(t, 0)
	e.Load(t, b0)
	if err := p.Process(context.Background(), b0); err != nil {
		t.Fatal(err)
	}
	if hz.Pending() == 0 {
		t.Fatal("nothing declared")
	}
	ids, _ := b0.Int64s(batch.IDs)
	slots, _ := b0.Int64s(batch.Slots)
	var filled, bypassed int64 = -1, -1
	for i, s := range slots[:e.Set.Layout.IDsPerTable] { // table 0
		if s >= 0 && filled < 0 {
			filled = s
		}
		if s < 0 && bypassed < 0 {
			bypassed = ids[i]
		}
	}
	if filled < 0 || bypassed < 0 {
		t.Fatalf("want a filled slot and a bypassed row in table 0: slots %v", slots[:e.Set.Layout.IDsPerTable])
	}
	var h *hazard.Hazard
	if err := hz.ReadSlots(1, "collect", 0, []int64{filled}); !errors.As(err, &h) || h.WriterStage != "insert" || h.RAW != 3 {
		t.Errorf("reading filled slot %d: %v, want RAW-3 by insert", filled, err)
	}
	if err := hz.ReadRows(1, "collect", 0, []int64{bypassed}); !errors.As(err, &h) || h.WriterStage != "train" {
		t.Errorf("reading bypassed row %d: %v, want a hazard on train's host write", bypassed, err)
	}
	hz.Wrote(0, "insert")
	hz.Wrote(0, "train")
	if n := hz.Pending(); n != 0 {
		t.Errorf("%d writes pending after insert and train", n)
	}
}

func TestConfig(t *testing.T) {
	c := NewFactory().CreateDefaultConfig().(*Config)
	if p, f := c.Windows(); p != 3 || f != 2 {
		t.Errorf("default windows %d, %d; want 3, 2", p, f)
	}
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
	for _, bad := range []struct {
		c    Config
		want string
	}{
		{Config{PastWindow: -1, FutureWindow: 2}, "past_window: must be ≥ 0"},
		{Config{PastWindow: 3, FutureWindow: -2}, "future_window: must be ≥ 0"},
		{Config{PastWindow: 40, FutureWindow: 24}, "past_window: past_window + 1 + future_window = 65"},
	} {
		if err := bad.c.Validate(); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: err = %v, want %q", bad.c, err, bad.want)
		}
	}
	e := stagetest.New(t, stagetest.Options{})
	if _, err := stagetest.Create(t, NewFactory(), e.Set, nil); err == nil || !strings.Contains(err.Error(), "cache") {
		t.Errorf("no cache plugin: err = %v", err)
	}
}
