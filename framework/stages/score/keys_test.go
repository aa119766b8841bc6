package score

import (
	"context"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stages/internal/stagetest"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/model"
)

// TestRowKeys: every lookup of every bag, table by table, as the device
// sees it (device.RowKey), from the kernel's bag layout — offsets per
// table, IDs from each table's start.
func TestRowKeys(t *testing.T) {
	// Two tables, two bags each: table 0 looks up 5 | 6 7, table 1 (its
	// IDs from index 3) 9 9 | (nothing).
	ids := []int64{5, 6, 7, 9, 9}
	offs := []int64{0, 1, 3, 0, 2, 2}
	start := []int64{0, 3}
	got := rowKeys(nil, ids, offs, start, 2)
	want := []uint64{device.RowKey(0, 5), device.RowKey(0, 6), device.RowKey(0, 7), device.RowKey(1, 9), device.RowKey(1, 9)}
	if !slices.Equal(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
}

// recorder is a device that keeps every op it is asked to price.
type recorder struct {
	device.Device
	ops []device.Op
}

func (r *recorder) Cost(ctx context.Context, req *device.CostRequest) (*device.CostResult, error) {
	r.ops = append(r.ops, req.Ops...)
	return r.Device.Cost(ctx, req)
}

// shaped is a model that lists its forward pass's layer shapes.
type shaped struct {
	model.Model
	layers []device.Layer
}

func (s *shaped) Step(ctx context.Context, req *model.StepRequest) (*model.StepResult, error) {
	res, err := s.Model.Step(ctx, req)
	if err == nil {
		res.Layers = s.layers
	}
	return res, err
}

// TestScoreSendsKeysAndLayers: the gather's op carries one row key per
// lookup, and the mlp op the model's layer shapes exactly as the model
// listed them, so that a device pricing a systolic array's tiling (rpaccel)
// sees the stage's real shapes.
func TestScoreSendsKeysAndLayers(t *testing.T) {
	e := stagetest.New(t, stagetest.Options{})
	host, gpu := &recorder{Device: e.Set.Devices["host"]}, &recorder{Device: e.Set.Devices["gpu"]}
	e.Set.Devices = map[string]device.Device{"host": host, "gpu": gpu}
	n := int64(e.Set.Layout.BatchSize)
	layers := []device.Layer{{M: n, K: 13, N: 8}, {M: n, K: 8, N: 1}}
	e.Set.Model = &shaped{Model: e.Set.Model, layers: layers}
	s, err := stagetest.Create(t, NewFactory(), e.Set, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := e.Batch(t, 0)
	e.Load(t, b)
	stagetest.Process(t, s, b)
	var mlp, gather *device.Op
	for i, op := range gpu.ops {
		if op.Name == "mlp" {
			mlp = &gpu.ops[i]
		}
	}
	for i, op := range host.ops {
		if op.Name == "gather-reduce" {
			gather = &host.ops[i]
		}
	}
	if mlp == nil || !slices.Equal(mlp.Layers, layers) || mlp.FLOPs <= 0 {
		t.Fatalf("mlp op %+v, want layers %v and FLOPs", mlp, layers)
	}
	offs, _ := batch.Offsets.View(b)
	lookups := 0
	T := e.Set.Layout.Tables
	for tab := range T {
		lookups += int(offs[tab*(int(n)+1)+int(n)] - offs[tab*(int(n)+1)])
	}
	if gather == nil || len(gather.Keys) != lookups {
		t.Fatalf("gather op with %d keys, want %d (one per lookup)", len(gather.Keys), lookups)
	}
}
