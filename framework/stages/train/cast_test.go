package train

import (
	"context"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/stages/internal/stagetest"
	"github.com/flowrun/flowrun/sdk/device"
)

// opRecorder is a device that remembers the names of the ops it priced.
type opRecorder struct {
	device.Device
	names []string
}

func (r *opRecorder) Cost(ctx context.Context, req *device.CostRequest) (*device.CostResult, error) {
	for _, op := range req.Ops {
		r.names = append(r.names, op.Name)
	}
	return r.Device.Cost(ctx, req)
}

// The update after an unfused expand-coalesce is charged as "apply", not
// "scatter" (whose host efficiency prices the fused expand-coalesce and
// update), and still counts as Fig. 12's scatter primitive.
func TestSplitBackwardChargesApply(t *testing.T) {
	e := stagetest.New(t, stagetest.Options{})
	host := &opRecorder{Device: e.Set.Devices["host"]}
	e.Set.Devices["host"] = host
	s, err := stagetest.Create(t, NewFactory(), e.Set, func(c stage.Config) { c.(*Config).BackwardDevice = "host" })
	if err != nil {
		t.Fatal(err)
	}
	b := e.Batch(t, 0)
	e.Load(t, b)
	stagetest.Process(t, s, b)
	if want := []string{"gather-reduce", OpApply, "expand-coalesce"}; !slices.Equal(host.names, want) {
		t.Errorf("host ops %v, want %v", host.names, want)
	}
	for _, p := range []string{"gather", "backward", "scatter"} {
		if b.Stats["modeled_prim_"+p+"_ns"] <= 0 {
			t.Errorf("modeled_prim_%s_ns = %d", p, b.Stats["modeled_prim_"+p+"_ns"])
		}
	}
}

// Fig. 6 of Tensor Casting: expand and coalesce together move "around 3×"
// the traffic of the gather-reduce (at no coalescing, every lookup a
// distinct row); the sort comes on top. The casted gather-reduce moves
// about two thirds of it: one gradient read per lookup, one row written
// per unique row.
func TestBackwardBytesFollowFig6(t *testing.T) {
	d := stagetest.Small()
	d.Dim = 64     // Tensor Casting's default embedding (Sec. V)
	d.Lookups = 10 // Fig. 6: "each table is gathered 10 times"
	e := stagetest.New(t, stagetest.Options{Dataset: d})
	tr := &trainer{set: e.Set}
	l := e.Set.Layout
	n := int64(l.Tables) * int64(l.IDsPerTable)
	row := 4 * int64(l.Dim)
	ec := tr.expandCoalesceBytes(n, n) // every lookup a distinct row
	sort := 8*n + int64(tr.sortPasses())*16*n + 16*n
	gather := n*(8+row) + int64(l.Tables)*int64(l.BatchSize)*row
	if r := float64(ec-sort) / float64(gather); r < 2.5 || r > 3.5 {
		t.Errorf("expand-coalesce (no sort) / gather-reduce = %.2f, want ≈3 (Fig. 6)", r)
	}
	cgr := tr.castGatherReduceBytes(n, n)
	if r := float64(cgr) / float64(ec-sort); r < 0.55 || r > 0.8 {
		t.Errorf("casted gather-reduce / expand-coalesce (no sort) = %.2f, want ≈2/3", r)
	}
}

// Coalesced on one device and applied on another (Baseline(NMP): the host
// coalesces, the NMP pool updates), the coalesced gradients cross the
// coalescing device's link.
func TestSplitBackwardHandsOffCoalesced(t *testing.T) {
	e := stagetest.New(t, stagetest.Options{})
	host := &opRecorder{Device: e.Set.Devices["host"]}
	e.Set.Devices["host"] = host
	s, err := stagetest.Create(t, NewFactory(), e.Set, func(c stage.Config) {
		c.(*Config).HostDevice, c.(*Config).ComputeDevice, c.(*Config).BackwardDevice = "gpu", "", "host"
	})
	if err != nil {
		t.Fatal(err)
	}
	b := e.Batch(t, 0)
	e.Load(t, b)
	stagetest.Process(t, s, b)
	if want := []string{"expand-coalesce", "coalesced-to-update"}; !slices.Equal(host.names, want) {
		t.Errorf("host ops %v, want %v", host.names, want)
	}
	if b.Stats["modeled_prim_transfer_ns"] <= 0 {
		t.Errorf("stats %v", b.Stats)
	}
}

// What a batch charges where, with the defaults (backward: coalesce fused
// into scatter): the host gathers and scatters; the compute device moves
// the pooled embeddings, runs the MLP and, for a training batch only, the
// training framework's step and the gradients' way back. A held-out batch
// updates nothing.
func TestOpsOfATrainingAndAHeldOutBatch(t *testing.T) {
	e := stagetest.New(t, stagetest.Options{})
	host := &opRecorder{Device: e.Set.Devices["host"]}
	gpu := &opRecorder{Device: e.Set.Devices["gpu"]}
	e.Set.Devices["host"], e.Set.Devices["gpu"] = host, gpu
	s := stagetest.MustCreate(t, NewFactory(), e.Set)
	b := e.Batch(t, 0)
	e.Load(t, b)
	stagetest.Process(t, s, b)
	if want := []string{"gather-reduce", "scatter"}; !slices.Equal(host.names, want) {
		t.Errorf("training batch: host ops %v, want %v", host.names, want)
	}
	if want := []string{"pooled-to-device", "mlp", OpTrainStep, "grads-to-host"}; !slices.Equal(gpu.names, want) {
		t.Errorf("training batch: gpu ops %v, want %v", gpu.names, want)
	}
	if b.Stats["modeled_prim_transfer_ns"] <= 0 || b.Stats["scatter_bytes"] <= 0 {
		t.Errorf("training batch: stats %v", b.Stats)
	}
	if got := e.Set.Metrics.Series("loss"); len(got) != 1 || got[0].Seq != 0 {
		t.Errorf("loss series %v, want batch 0's", got)
	}

	host.names, gpu.names = nil, nil
	eval := e.Batch(t, 1)
	eval.Eval = true
	e.Load(t, eval)
	stagetest.Process(t, s, eval)
	if want := []string{"gather-reduce"}; !slices.Equal(host.names, want) {
		t.Errorf("held-out batch: host ops %v, want %v", host.names, want)
	}
	if want := []string{"pooled-to-device", "mlp"}; !slices.Equal(gpu.names, want) {
		t.Errorf("held-out batch: gpu ops %v, want %v", gpu.names, want)
	}
	if _, ok := eval.Stats["scatter_bytes"]; ok || len(e.Set.Metrics.Series("loss")) != 1 {
		t.Errorf("held-out batch: stats %v, loss series %v", eval.Stats, e.Set.Metrics.Series("loss"))
	}
}
