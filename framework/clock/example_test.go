package clock_test

import (
	"fmt"

	"github.com/flowrun/flowrun/framework/clock"
)

// ScratchPipe's six stages (Fig. 10) with the resources each occupies and
// modeled times in µs. Sequential (the straw-man) takes the sum, 29 per
// batch. Pipelined is bound not by the slowest stage (train, 10) but by
// the busiest resource: plan and train share the GPU, 13 per batch. Its
// steady iteration comes out a little under that bound on 32 batches:
// plans of later batches ran on the GPU before the first batch completed.
func Example() {
	stages := []clock.StageSpec{
		{Name: "load", Resources: []string{"host"}},
		{Name: "plan", Upstream: []string{"load"}, Resources: []string{"gpu"}},
		{Name: "collect", Upstream: []string{"plan"}, Resources: []string{"host-dram"}},
		{Name: "exchange", Upstream: []string{"collect"}, Resources: []string{"pcie"}},
		{Name: "insert", Upstream: []string{"exchange"}, Resources: []string{"host-dram"}},
		{Name: "train", Upstream: []string{"insert"}, Resources: []string{"gpu"}},
	}
	per := []int64{2, 3, 6, 5, 3, 10} // µs per batch
	const batches = 32
	durations := make([][]int64, len(stages))
	for k := range stages {
		durations[k] = make([]int64, batches)
		for b := range batches {
			durations[k][b] = per[k] * 1000
		}
	}
	// The runtime's pool: a buffer per stage plus two credits.
	for _, s := range []clock.Scheduler{{Mode: clock.Pipelined, Depth: 8}, {Mode: clock.Sequential}} {
		tl, err := s.Schedule(stages, durations)
		if err != nil {
			panic(err)
		}
		sum := tl.Summary()
		fmt.Printf("%s: modeled makespan %d µs, steady iteration %.1f µs, bound %.1f µs (%s)\n",
			sum.Mode, sum.MakespanNs/1000, sum.SteadyIterationNs/1000, sum.BoundIterationNs/1000, sum.Bottleneck)
	}
	// Output:
	// pipelined: modeled makespan 418 µs, steady iteration 12.5 µs, bound 13.0 µs (gpu)
	// sequential: modeled makespan 928 µs, steady iteration 29.0 µs, bound 13.0 µs (gpu)
}
