package main

import (
	"fmt"

	"github.com/flowrun/flowrun/framework/clock"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/graph"
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
// from the run's spans (flowrun.modeled_ns), schedules the whole run again
// the way the runtime does (framework/runtime: modeledClock), and takes
// the mean interval between batches leaving the graph over a window:
// from the first batch after the warm-up to the last one the end of the
// run leaves alone. With a future window of L batches, the last L+1 are
// left out: once the loader has run dry, plan stops waiting for batches
// that will never come and plans them back to back, and they overlap
// (in a sequential graph too). With the window from batch
// 1 to the last, it is the runtime's figure (TestBenchWarmupMatchesRuntime
// keeps the two in step).

// modeledDurations reads the modeled ns of every stage for every batch
// from a span file: stage name → batch → ns (0 where a stage charged
// nothing), and the number of batches.
func modeledDurations(path string) (map[string][]int64, int, error) {
	recs, err := telemetry.ReadSpansFile(path)
	if err != nil {
		return nil, 0, err
	}
	type key struct {
		stage string
		seq   int64
	}
	ns := map[key]int64{}
	batches := 0
	for _, r := range recs {
		stage, ok1 := r.String("flowrun.stage")
		seq, ok2 := r.Int("flowrun.batch.seq")
		if !ok1 || !ok2 || seq < 0 {
			continue
		}
		batches = max(batches, int(seq)+1)
		if v, ok := r.Int("flowrun.modeled_ns"); ok {
			ns[key{stage, seq}] = v
		} else if _, seen := ns[key{stage, seq}]; !seen {
			ns[key{stage, seq}] = 0
		}
	}
	out := map[string][]int64{}
	for k, v := range ns {
		if out[k.stage] == nil {
			out[k.stage] = make([]int64, batches)
		}
		out[k.stage][k.seq] = v
	}
	return out, batches, nil
}

// modeledTimeline schedules the run's dependency graph on the stages'
// modeled durations per batch, as the runtime does; lookahead is the
// stages' total lookahead.
func modeledTimeline(g *graph.Graph, durations map[string][]int64, batches int) (tl *clock.Timeline, lookahead int, err error) {
	producer := map[string]string{}
	for _, gn := range g.Nodes {
		for _, out := range gn.Out {
			producer[out] = gn.Name
		}
	}
	specs := make([]clock.StageSpec, len(g.Nodes))
	ds := make([][]int64, len(g.Nodes))
	for i, gn := range g.Nodes {
		specs[i] = clock.StageSpec{Name: gn.Name, Resources: stageResources(gn.Options)}
		if gn.In != "" {
			specs[i].Upstream = []string{producer[gn.In]}
		}
		// The stage whose options carry the windows (plan) looks ahead by
		// its future window.
		if w, ok := gn.Options.(graph.Windowed); ok {
			_, future := w.Windows()
			specs[i].Lookahead = future
			lookahead += future
		}
		ds[i] = make([]int64, batches)
		if d := durations[gn.Name]; d != nil {
			copy(ds[i], d)
		}
	}
	cfg := g.Config
	sched := clock.Scheduler{Mode: clock.Pipelined, Depth: len(g.Nodes) + cfg.NATS.Credits + lookahead}
	if cfg.Pipeline == config.Sequential {
		sched = clock.Scheduler{Mode: clock.Sequential}
	}
	tl, err = sched.Schedule(specs, ds)
	if err != nil {
		return nil, 0, fmt.Errorf("modeled clock: %w", err)
	}
	return tl, lookahead, nil
}

// windowIterationMs is the mean interval, in ms, between batches first
// and last leaving the graph: (Completion(last) − Completion(first−1)) /
// (last − first + 1), first ≥ 1.
func windowIterationMs(tl *clock.Timeline, first, last int) float64 {
	return float64(tl.Completion(last)-tl.Completion(first-1)) / float64(last-first+1) / 1e6
}

// steadyModeledMs is the modeled iteration time, in ms, of the batches
// after the first warmup that still had their full future window.
func steadyModeledMs(g *graph.Graph, durations map[string][]int64, batches, warmup int) (float64, error) {
	tl, lookahead, err := modeledTimeline(g, durations, batches)
	if err != nil {
		return 0, err
	}
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

// stageResources are the devices and links a stage occupies on the modeled
// clock, as the runtime has them: its config's ModeledResources when it
// says, else the devices it names.
func stageResources(options any) []string {
	switch c := options.(type) {
	case interface{ ModeledResources() []string }:
		return c.ModeledResources()
	case graph.DeviceUser:
		return c.DeviceNames()
	}
	return nil
}
