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
// warm-up; this drops it.
//
// The runtime's modeled clock schedules every batch of the run and keeps
// only the summary. bench reads each stage's modeled time per batch back
// from the run's spans (flowrun.modeled_ns) and schedules the batches
// from the warm-up on, the way the runtime schedules them all
// (framework/runtime: modeledClock); with warm-up 0 it gives the
// runtime's figure (TestBenchWarmupMatchesRuntime keeps them in step).

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

// steadyModeledMs is the steady modeled iteration time, in ms, of the
// batches from warmup on: the graph's dependency graph scheduled as the
// runtime schedules it, on the durations read from its spans.
func steadyModeledMs(g *graph.Graph, durations map[string][]int64, batches, warmup int) (float64, error) {
	n := batches - warmup
	if n < 2 {
		return 0, fmt.Errorf("--warmup %d leaves %d of %d batches: at least 2 needed", warmup, max(n, 0), batches)
	}
	producer := map[string]string{}
	for _, gn := range g.Nodes {
		for _, out := range gn.Out {
			producer[out] = gn.Name
		}
	}
	specs := make([]clock.StageSpec, len(g.Nodes))
	ds := make([][]int64, len(g.Nodes))
	ahead := 0
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
			ahead += future
		}
		ds[i] = make([]int64, n)
		if d := durations[gn.Name]; d != nil {
			copy(ds[i], d[warmup:])
		}
	}
	cfg := g.Config
	sched := clock.Scheduler{Mode: clock.Pipelined, Depth: len(g.Nodes) + cfg.NATS.Credits + ahead}
	if cfg.Pipeline == config.Sequential {
		sched = clock.Scheduler{Mode: clock.Sequential}
	}
	tl, err := sched.Schedule(specs, ds)
	if err != nil {
		return 0, fmt.Errorf("modeled clock after warm-up: %w", err)
	}
	return tl.SteadyIteration() / 1e6, nil
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
