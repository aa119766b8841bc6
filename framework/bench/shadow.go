package bench

import (
	"context"
	"fmt"
	"strings"
)

// SweptByShadows and SweptByRuns say how a --shadows comparison got its
// figures (Comparison.SweptBy).
const (
	SweptByShadows = "shadows (one run)"
	SweptByRuns    = "full runs"
)

// ShadowRunner is a Runner that can also check a graph with a shadow
// stage beside its plan stage, one shadow policy per sweep point, so that
// a sweep of the cache alone takes one run instead of one per point.
type ShadowRunner interface {
	Runner
	// CheckShadowed checks the graph at path with the overrides sets and
	// a shadow stage fed what its plan stage is fed, holding, in the order
	// of points, the cache each point's overrides make. The run's
	// results.shadows come in that order. An error says why the graph
	// cannot be shadowed (no plan stage).
	CheckShadowed(path string, sets []string, points [][]string) (Graph, error)
}

// shadowKeys are the keys a shadow can sweep: a policy's decisions depend
// only on the ID stream, its size and its options.
var shadowKeys = map[string]bool{"cache.size": true, "cache.plugin": true}

// shadowRefusal says why o cannot be swept by shadows ("" when it can):
// a swept key other than the cache's policy or size, a runner that cannot
// shadow, or a point at which the graph is invalid (a policy the graph
// would refuse as its cache, as it refuses it as a shadow).
func shadowRefusal(r Runner, o Options) string {
	if len(o.Sweep) == 0 {
		return "no --sweep to shadow"
	}
	for _, s := range o.Sweep {
		if !shadowKeys[strings.ToLower(s.Key)] {
			return fmt.Sprintf("--sweep %s: only cache.size and cache.plugin can be shadowed", s.Key)
		}
	}
	if _, ok := r.(ShadowRunner); !ok {
		return "this runner cannot add a shadow stage"
	}
	plans, err := check(r, o)
	if err != nil {
		return err.Error()
	}
	for _, p := range plans {
		if p.run.Error != "" {
			return fmt.Sprintf("%s %s is invalid: %s", p.run.File, strings.Join(p.run.Point, " "), firstLine(p.run.Error))
		}
	}
	return ""
}

// compareShadows runs each graph once with a shadow of every sweep point
// and sets the shadows' figures out as one row per point and graph. It
// returns the reason when a graph cannot be shadowed (nothing ran then),
// and an error only when ctx stopped the run.
func compareShadows(ctx context.Context, r ShadowRunner, o Options, c *Comparison) (reason string, err error) {
	pts := Points(o.Sweep)
	graphs := make([]Graph, len(o.Graphs))
	for i, path := range o.Graphs {
		if graphs[i], err = r.CheckShadowed(path, o.Sets, pts); err != nil {
			return fmt.Sprintf("%s: %s", path, firstLine(err.Error())), nil
		}
	}
	c.SweptBy = SweptByShadows
	c.Runs = make([]Run, len(pts)*len(o.Graphs))
	for gi, g := range graphs {
		path := o.Graphs[gi]
		if o.Log != nil {
			fmt.Fprintf(o.Log, "bench [%d/%d] %s with %d shadows\n", gi+1, len(graphs), path, len(pts))
		}
		res, _, err := g.Run(ctx, false)
		if err != nil && ctx.Err() != nil {
			return "", err
		}
		for pi, pt := range pts {
			run := Run{Graph: g.Name(), File: path, Point: pt, FromShadows: true}
			switch {
			case err != nil:
				run.Error = err.Error()
			case len(res.Shadows) != len(pts):
				run.Error = fmt.Sprintf("the run reported %d shadows, want %d", len(res.Shadows), len(pts))
			default:
				run.fillShadow(res.Batches, &res.Shadows[pi])
			}
			c.Runs[pi*len(o.Graphs)+gi] = run
		}
	}
	return "", nil
}
