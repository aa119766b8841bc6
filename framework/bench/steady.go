package bench

import "fmt"

// The modeled iteration time of a run after its warm-up, for bench
// --warmup: a cache starts empty, and until it is full a batch has misses
// but no victims, so the first batches of a run cost less (or more) than
// the ones that follow. Short runs of paper-sized graphs are mostly
// warm-up; this leaves it out.
//
// The runner hands bench the run's modeled schedule (Modeled), the one
// its iteration_ms.modeled comes from, and bench takes the mean interval
// between batches leaving the graph over a window: from the first batch
// after the warm-up to the last one the end of the run leaves alone. With
// a future window of L batches, the last L+1 are left out: once the
// loader has run dry, plan stops waiting for batches that will never come
// and plans them back to back, and they overlap (in a sequential graph
// too). With the window from batch 1 to the last, it is the runtime's
// figure (TestBenchWarmupMatchesRuntime in cmd/flowrun keeps the two in
// step).

// Modeled is what bench needs of a run's modeled schedule (the runtime's
// modeled timeline has it all).
type Modeled struct {
	// Batches is the number of batches scheduled, training and held-out.
	Batches int
	// Lookahead is the stages' total lookahead (their future windows).
	Lookahead int
	// Completion is the modeled time, in ns, at which batch b left the
	// graph.
	Completion func(b int) int64
}

// IterationMs is the mean interval, in ms, between batches first and last
// leaving the graph: (Completion(last) − Completion(first−1)) /
// (last − first + 1), first ≥ 1.
func (m *Modeled) IterationMs(first, last int) float64 {
	return float64(m.Completion(last)-m.Completion(first-1)) / float64(last-first+1) / 1e6
}

// SteadyMs is the modeled iteration time, in ms, of the batches after the
// first warmup that still had their full future window.
func (m *Modeled) SteadyMs(warmup int) (float64, error) {
	// With a lookahead, the batches from Batches−1−Lookahead on are
	// planned at once when the loader runs dry, and overlap.
	first, last := max(warmup, 1), m.Batches-1
	if m.Lookahead > 0 {
		last -= m.Lookahead + 1
	}
	if last < first {
		return 0, fmt.Errorf("--warmup %d: a run of %d batches, whose last %d overlap at its end, leaves none to time (want at least %d batches)",
			warmup, m.Batches, m.Lookahead+1, first+m.Lookahead+2)
	}
	return m.IterationMs(first, last), nil
}
