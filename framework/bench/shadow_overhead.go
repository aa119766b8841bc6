package bench

import (
	"context"
	"fmt"
	"slices"

	"github.com/flowrun/flowrun/framework/results"
)

// What shadow policies cost the serving path, measured: a graph without
// and with a shadow stage, run in pairs, the two alternated (the order
// swapped every pair, so that a machine getting busier or quieter weighs
// on both alike), each pair's ratio taken, and the median of the ratios
// reported. The serving path's time is the run's wall time less the time
// the run waited at its end for the shadows to catch up (results'
// shadows drain_ms): what training and serving took, with the shadows
// working beside them.

// OverheadPair is one pair of runs: the serving path's wall time per
// batch without and with the shadows (ms, measured), the end-to-end wall
// time per batch with them, and how far behind they were at the end.
type OverheadPair struct {
	WithoutMs, WithMs, WithEndToEndMs float64
	// SteadyWithoutMs and SteadyWithMs are the steady-state iterations
	// (results' iteration_ms.steady_wall): between the first and the last
	// batch leaving the graph, so without the start-up (the shadows'
	// processes launched) and without the end.
	SteadyWithoutMs, SteadyWithMs float64
	BehindBatches                 int64
	DrainMs                       float64
}

// ShadowOverhead is the pairs and the medians of their ratios: Ratio, the
// serving path's with over without; EndToEnd, the whole run's with over
// the serving path's without (the shadows' drain included); Steady, the
// steady-state iteration's with over without.
type ShadowOverhead struct {
	Pairs           []OverheadPair
	Ratio, EndToEnd float64
	// Steady is the median of the pairs' steady-state ratios.
	Steady float64
}

// ServingMsPerBatch is r's wall time per batch (training and held-out)
// less the time the run waited for its shadow stages at the end (each
// stage's drain once; a stage's policies share it).
func ServingMsPerBatch(r *results.Results) float64 {
	wall := r.WallMs
	for i, s := range r.Shadows {
		if i == 0 || r.Shadows[i-1].Stage != s.Stage {
			wall -= s.DrainMs
		}
	}
	return wall / float64(max(r.Batches+r.EvalBatches, 1))
}

// MeasureShadowOverhead runs without and with pairs times each, the two
// alternated, and returns the pairs and the medians of their ratios. Both
// runs of a pair must end with the same digest: shadows touch no training.
// each, when not nil, is called after every pair.
func MeasureShadowOverhead(ctx context.Context, without, with Graph, pairs int, each func(int, OverheadPair)) (*ShadowOverhead, error) {
	if pairs < 1 {
		return nil, fmt.Errorf("pairs %d: want at least 1", pairs)
	}
	o := &ShadowOverhead{}
	var ratios, ends, steady []float64
	for i := range pairs {
		order := []Graph{without, with}
		if i%2 == 1 {
			order = []Graph{with, without}
		}
		var res [2]*results.Results
		for _, g := range order {
			r, _, err := g.Run(ctx, false)
			if err != nil {
				return nil, fmt.Errorf("pair %d: %w", i, err)
			}
			res[btoi(g == with)] = r
		}
		if res[0].Digest != res[1].Digest {
			return nil, fmt.Errorf("pair %d: digest with shadows %s, without %s", i, res[1].Digest, res[0].Digest)
		}
		p := OverheadPair{WithoutMs: ServingMsPerBatch(res[0]), WithMs: ServingMsPerBatch(res[1]),
			WithEndToEndMs:  res[1].WallMs / float64(max(res[1].Batches+res[1].EvalBatches, 1)),
			SteadyWithoutMs: res[0].IterationMs.SteadyWall, SteadyWithMs: res[1].IterationMs.SteadyWall}
		if len(res[1].Shadows) > 0 {
			p.BehindBatches, p.DrainMs = res[1].Shadows[0].BehindBatches, res[1].Shadows[0].DrainMs
		}
		o.Pairs = append(o.Pairs, p)
		ratios = append(ratios, p.WithMs/p.WithoutMs)
		ends = append(ends, p.WithEndToEndMs/p.WithoutMs)
		if p.SteadyWithoutMs > 0 {
			steady = append(steady, p.SteadyWithMs/p.SteadyWithoutMs)
		}
		if each != nil {
			each(i, p)
		}
	}
	slices.Sort(ratios)
	slices.Sort(ends)
	slices.Sort(steady)
	o.Ratio, o.EndToEnd = median(ratios), median(ends)
	if len(steady) > 0 {
		o.Steady = median(steady)
	}
	return o, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
