package runtime

import (
	"fmt"

	"github.com/flowrun/flowrun/framework/clock"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/graph"
)

// modeledTimes is what a run's stages charged on the modeled clock, by
// batch sequence.
type modeledTimes struct {
	// Batches is the run's batch count, held-out batches included.
	Batches int
	// Stage is each stage's modeled time per batch (modeled_ns; 0 or
	// missing where it charged nothing).
	Stage map[string][]int64
	// Device is, per stage, the part of it charged to each of the graph's
	// devices (stage.DeviceStat); missing for a stage that recorded none.
	Device map[string]map[string][]int64
}

// scheduleModeled schedules the graph's real dependency graph on t, the way
// every run's modeled clock is computed (DESIGN.md "Two clocks"): one
// clock stage per graph stage, upstream by subject, the plan stage looking
// ahead by its future window, each stage occupying the devices it names
// (or its ModeledResources), each device for the part of the stage's time
// charged to it when the stage said, and as many batches in flight as the
// runtime's batch pool (one past the lookahead for a sequential graph).
// It returns the timeline and the stages' total lookahead.
func scheduleModeled(nodes []graph.Node, cfg *config.Config, t modeledTimes) (*clock.Timeline, int, error) {
	producer := map[string]string{}
	for _, n := range nodes {
		for _, out := range n.Out {
			producer[out] = n.Name
		}
	}
	lookahead := 0
	specs := make([]clock.StageSpec, len(nodes))
	durations := make([][]int64, len(nodes))
	for i, n := range nodes {
		res, byDevice := stageResources(n.Options)
		specs[i] = clock.StageSpec{Name: n.Name, Resources: res}
		if n.In != "" {
			specs[i].Upstream = []string{producer[n.In]}
		}
		if w, ok := n.Options.(graph.Windowed); ok {
			_, future := w.Windows()
			specs[i].Lookahead = future
			lookahead += future
		}
		durations[i] = fit(t.Stage[n.Name], t.Batches)
		if devs := t.Device[n.Name]; byDevice && devs != nil {
			// The stage said what it charged to each of its devices: the
			// clock holds each for that long (not at all for a device it
			// charged nothing), not all of them for its whole time.
			specs[i].Holds = make(map[string][]int64, len(res))
			for _, d := range res {
				specs[i].Holds[d] = fit(devs[d], t.Batches)
			}
		}
	}
	mode := clock.Pipelined
	if cfg.Pipeline == config.Sequential {
		mode = clock.Sequential
	}
	tl, err := clock.Scheduler{Mode: mode, Depth: poolBuffers(cfg, len(nodes), lookahead)}.Schedule(specs, durations)
	if err != nil {
		return nil, 0, fmt.Errorf("modeled clock: %w", err)
	}
	return tl, lookahead, nil
}

// fit is v as exactly n values, zeros where it has none.
func fit(v []int64, n int) []int64 {
	out := make([]int64, n)
	copy(out, v)
	return out
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
