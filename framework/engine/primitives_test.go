package engine

import (
	"reflect"
	"testing"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/results"
)

// A stage's per-primitive stats are summed over its batches, its device
// charges are also kept per batch sequence for the modeled clock, and
// other stats are ignored.
func TestPrimitives(t *testing.T) {
	n := &node{Node: graph.Node{Name: "collect"}, modBySeq: make([]int64, 3)}
	for seq, stats := range []map[string]int64{
		{"prim_gather_ns": 5, "modeled_prim_gather_ns": 2_000_000, "modeled_dev_host_ns": 3_000_000, "misses": 9},
		{"misses": 1},
		{"prim_gather_ns": 7, "modeled_dev_host_ns": 1_000_000, "modeled_dev_gpu_ns": 500_000},
	} {
		n.addPrims(batch.New(&batch.Header{Seq: uint64(seq), Stats: stats}, nil))
	}
	if n.primBatches != 2 {
		t.Errorf("%d batches reported primitives, want 2", n.primBatches)
	}
	wantDev := map[string][]int64{"host": {3_000_000, 0, 1_000_000}, "gpu": {0, 0, 500_000}}
	if !reflect.DeepEqual(n.devBySeq, wantDev) {
		t.Errorf("device time by sequence %v, want %v", n.devBySeq, wantDev)
	}
	got := (&run{nodes: []*node{n, {Node: graph.Node{Name: "load"}}}}).primitives(8_000_000)
	want := []results.Primitives{{
		Stage: "collect", Batches: 2,
		WallMs:            map[string]float64{"gather": 12e-6},
		ModeledMs:         map[string]float64{"gather": 2},
		DeviceBusyMs:      map[string]float64{"host": 4, "gpu": 0.5},
		DeviceUtilisation: map[string]float64{"host": 0.5, "gpu": 0.0625},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("primitives %+v, want %+v", got, want)
	}
}
