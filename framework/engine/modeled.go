package engine

import (
	"fmt"

	"github.com/flowrun/flowrun/framework/clock"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/graph"
)

// scheduleModeled schedules the run's real dependency graph on what its
// stages charged per batch (modBySeq, devBySeq), the way every run's
// modeled clock is computed (DESIGN.md "Two clocks"): one clock stage per
// graph stage, upstream by subject, a stage that looks ahead
// (stage.Lookahead: plan's future window) by as many batches, each stage
// occupying the devices it names (or its ModeledResources), each device
// for the part of the stage's time charged to it when the stage said, and
// as many batches in flight as the run's batch pool (one past the
// lookahead for a sequential graph). It returns the timeline and the
// stages' total lookahead.
func (r *run) scheduleModeled(cfg *config.Config) (*clock.Timeline, int, error) {
	producer := map[string]string{}
	for _, n := range r.nodes {
		for _, out := range n.Out {
			producer[out] = n.Name
		}
	}
	lookahead := 0
	specs := make([]clock.StageSpec, len(r.nodes))
	durations := make([][]int64, len(r.nodes))
	for i, n := range r.nodes {
		res, byDevice := stageResources(n.Options)
		specs[i] = clock.StageSpec{Name: n.Name, Resources: res}
		if n.In != "" {
			specs[i].Upstream = []string{producer[n.In]}
		}
		specs[i].Lookahead = n.lookahead()
		lookahead += specs[i].Lookahead
		durations[i] = n.modBySeq
		if byDevice && n.devBySeq != nil {
			// The stage said what it charged to each of its devices: the
			// clock holds each for that long (not at all for a device it
			// charged nothing, nil here), not all of them for its whole
			// time.
			specs[i].Holds = make(map[string][]int64, len(res))
			for _, d := range res {
				specs[i].Holds[d] = n.devBySeq[d]
			}
		}
	}
	mode := clock.Pipelined
	if cfg.Pipeline == config.Sequential {
		mode = clock.Sequential
	}
	tl, err := clock.Scheduler{Mode: mode, Depth: poolBuffers(cfg, len(r.nodes), lookahead)}.Schedule(specs, durations)
	if err != nil {
		return nil, 0, fmt.Errorf("modeled clock: %w", err)
	}
	return tl, lookahead, nil
}

// stageResources are the devices and links a stage occupies on the modeled
// clock: its config's ModeledResources when it says, else the devices it
// names (byDevice: the resources are the graph's device names, which the
// stage's charges are recorded under).
func stageResources(options any) (names []string, byDevice bool) {
	switch c := options.(type) {
	case interface{ ModeledResources() []string }:
		return c.ModeledResources(), false
	case graph.DeviceUser:
		return c.DeviceNames(), true
	}
	return nil, false
}
