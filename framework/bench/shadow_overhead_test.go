package bench

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/results"
)

// The serving path's time leaves out each shadow stage's drain once; the
// runs alternate (without first, then with first); the ratios' median is
// taken; a pair whose digests differ is an error.
func TestMeasureShadowOverhead(t *testing.T) {
	var order []string
	walls := []float64{1000, 1200, 1100} // the run without shadows, pair by pair
	without := &fakeGraph{name: "g"}
	without.RunF = func(context.Context, bool) (*results.Results, *Modeled, error) {
		order = append(order, "without")
		return &results.Results{Batches: 8, EvalBatches: 2, Digest: "d", WallMs: walls[without.runs-1]}, nil, nil
	}
	with := &fakeGraph{name: "g"}
	with.RunF = func(context.Context, bool) (*results.Results, *Modeled, error) {
		order = append(order, "with")
		// 1.05, 1.2, 1.0 times the serving path without, plus a drain of
		// 500 ms in stage a (both policies) and 100 ms in stage b.
		serving := []float64{1050, 1440, 1100}[with.runs-1]
		return &results.Results{Batches: 8, EvalBatches: 2, Digest: "d", WallMs: serving + 600, Shadows: []results.Shadow{
			{Stage: "a", DrainMs: 500, BehindBatches: 7}, {Stage: "a", DrainMs: 500, BehindBatches: 7}, {Stage: "b", DrainMs: 100}}}, nil, nil
	}
	var seen int
	o, err := MeasureShadowOverhead(context.Background(), without, with, 3, func(int, OverheadPair) { seen++ })
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, " "); got != "without with with without without with" || seen != 3 {
		t.Errorf("order %q, %d callbacks", got, seen)
	}
	if math.Abs(o.Ratio-1.05) > 1e-9 || o.Pairs[1].WithMs != 144 || o.Pairs[1].WithEndToEndMs != 204 || o.Pairs[0].BehindBatches != 7 {
		t.Errorf("ratio %v, pairs %+v", o.Ratio, o.Pairs)
	}
	if want := (1050.0 + 600) / 1000; math.Abs(o.EndToEnd-want) > 1e-9 {
		t.Errorf("end to end %v, want %v", o.EndToEnd, want)
	}
	with.RunF = func(context.Context, bool) (*results.Results, *Modeled, error) {
		return &results.Results{Batches: 8, Digest: "other", WallMs: 1}, nil, nil
	}
	without.runs = 0
	if _, err := MeasureShadowOverhead(context.Background(), without, with, 1, nil); err == nil || !strings.Contains(err.Error(), "digest with shadows other") {
		t.Errorf("differing digests: %v", err)
	}
}
