package main

import (
	"fmt"
	"strings"

	"github.com/flowrun/flowrun/framework/clock"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/runtime"
	"github.com/flowrun/flowrun/framework/telemetry"
)

// The modeled iteration time of a run after its warm-up, for bench
// --warmup: a cache starts empty, and until it is full a batch has misses
// but no victims, so the first batches of a run cost less (or more) than
// the ones that follow. Short runs of paper-sized graphs are mostly
// warm-up; this leaves it out.
//
// The runtime's modeled clock schedules every batch of the run and keeps
// only the summary. bench reads each stage's modeled time per batch back
// from the run's spans (flowrun.modeled_ns, flowrun.modeled_dev_*_ns),
// schedules the whole run again with the runtime's own scheduling
// (runtime.ScheduleModeled), and takes
// the mean interval between batches leaving the graph over a window:
// from the first batch after the warm-up to the last one the end of the
// run leaves alone. With a future window of L batches, the last L+1 are
// left out: once the loader has run dry, plan stops waiting for batches
// that will never come and plans them back to back, and they overlap
// (in a sequential graph too). With the window from batch
// 1 to the last, it is the runtime's figure (TestBenchWarmupMatchesRuntime
// keeps the two in step).

// modeledTimes reads back from a span file what every stage charged on
// the modeled clock for every batch (flowrun.modeled_ns, and the part
// charged to each device, flowrun.modeled_dev_DEVICE_ns).
func modeledTimes(path string) (runtime.ModeledTimes, error) {
	t := runtime.ModeledTimes{Stage: map[string][]int64{}, Device: map[string]map[string][]int64{}}
	recs, err := telemetry.ReadSpansFile(path)
	if err != nil {
		return t, err
	}
	type key struct {
		stage string
		seq   int64
	}
	ns := map[key]int64{}
	dev := map[key]map[string]int64{}
	for _, r := range recs {
		stage, ok1 := r.String(telemetry.AttrStage)
		seq, ok2 := r.Int(telemetry.AttrBatchSeq)
		if !ok1 || !ok2 || seq < 0 {
			continue
		}
		t.Batches = max(t.Batches, int(seq)+1)
		k := key{stage, seq}
		if v, ok := r.Int("flowrun.modeled_ns"); ok {
			ns[k] = v
		}
		for name := range r.Attributes {
			d, ok := strings.CutPrefix(name, "flowrun.modeled_dev_")
			if !ok || !strings.HasSuffix(d, "_ns") {
				continue
			}
			if v, ok := r.Int(name); ok {
				if dev[k] == nil {
					dev[k] = map[string]int64{}
				}
				dev[k][strings.TrimSuffix(d, "_ns")] = v
			}
		}
	}
	for k, v := range ns {
		if t.Stage[k.stage] == nil {
			t.Stage[k.stage] = make([]int64, t.Batches)
		}
		t.Stage[k.stage][k.seq] = v
	}
	for k, m := range dev {
		if t.Device[k.stage] == nil {
			t.Device[k.stage] = map[string][]int64{}
		}
		for d, v := range m {
			if t.Device[k.stage][d] == nil {
				t.Device[k.stage][d] = make([]int64, t.Batches)
			}
			t.Device[k.stage][d][k.seq] = v
		}
	}
	return t, nil
}

// windowIterationMs is the mean interval, in ms, between batches first
// and last leaving the graph: (Completion(last) − Completion(first−1)) /
// (last − first + 1), first ≥ 1.
func windowIterationMs(tl *clock.Timeline, first, last int) float64 {
	return float64(tl.Completion(last)-tl.Completion(first-1)) / float64(last-first+1) / 1e6
}

// steadyModeledMs is the modeled iteration time, in ms, of the batches
// after the first warmup that still had their full future window.
func steadyModeledMs(g *graph.Graph, times runtime.ModeledTimes, warmup int) (float64, error) {
	tl, lookahead, err := runtime.ScheduleModeled(g.Nodes, g.Config, times)
	if err != nil {
		return 0, err
	}
	batches := times.Batches
	// With a lookahead, the batches from batches−1−lookahead on are
	// planned at once when the loader runs dry, and overlap.
	first, last := max(warmup, 1), batches-1
	if lookahead > 0 {
		last -= lookahead + 1
	}
	if last < first {
		return 0, fmt.Errorf("--warmup %d: a run of %d batches, whose last %d overlap at its end, leaves none to time (want at least %d batches)",
			warmup, batches, lookahead+1, first+lookahead+2)
	}
	return windowIterationMs(tl, first, last), nil
}
