package main

import (
	"fmt"

	"github.com/flowrun/flowrun/framework/clock"
)

// The modeled iteration time of a run after its warm-up, for bench
// --warmup: a cache starts empty, and until it is full a batch has misses
// but no victims, so the first batches of a run cost less (or more) than
// the ones that follow. Short runs of paper-sized graphs are mostly
// warm-up; this leaves it out.
//
// The runtime hands bench the run's modeled timeline (runtime.Options
// Modeled), the schedule its iteration_ms.modeled comes from, and bench
// takes the mean interval between batches leaving the graph over a
// window: from the first batch after the warm-up to the last one the end
// of the run leaves alone. With a future window of L batches, the last L+1
// are left out: once the loader has run dry, plan stops waiting for
// batches that will never come and plans them back to back, and they
// overlap (in a sequential graph too). With the window from batch 1 to the
// last, it is the runtime's figure (TestBenchWarmupMatchesRuntime keeps
// the two in step).

// windowIterationMs is the mean interval, in ms, between batches first
// and last leaving the graph: (Completion(last) − Completion(first−1)) /
// (last − first + 1), first ≥ 1.
func windowIterationMs(tl *clock.Timeline, first, last int) float64 {
	return float64(tl.Completion(last)-tl.Completion(first-1)) / float64(last-first+1) / 1e6
}

// steadyModeledMs is the modeled iteration time, in ms, of the batches of
// tl after the first warmup that still had their full future window (the
// stages' total lookahead).
func steadyModeledMs(tl *clock.Timeline, lookahead, warmup int) (float64, error) {
	batches := tl.Batches
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
