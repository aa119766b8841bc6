package engine

import (
	"fmt"

	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/hazard"
	"github.com/flowrun/flowrun/framework/stage"
)

// HazardMode is how a run checks ScratchPipe's read-after-write hazards
// (framework/hazard; flowrun run --check-hazards).
type HazardMode string

// The hazard modes.
const (
	// HazardsOff checks nothing (the default; a run pays nothing).
	HazardsOff HazardMode = ""
	// HazardsStrict also fails a read whose earlier write happened to
	// finish in time but that the pipeline's capacity does not order
	// before it: a plan whose windows are too small fails on every run,
	// whatever the timing (hazard.NewStrict).
	HazardsStrict HazardMode = "strict"
	// HazardsDynamic fails a read only when the earlier write was still
	// pending at that moment: what this run's interleaving did
	// (hazard.New).
	HazardsDynamic HazardMode = "dynamic"
)

// ParseHazardMode reads a --check-hazards value: strict, dynamic, or off
// (also "", false); true is strict.
func ParseHazardMode(s string) (HazardMode, error) {
	switch s {
	case "", "off", "false":
		return HazardsOff, nil
	case "strict", "true":
		return HazardsStrict, nil
	case "dynamic":
		return HazardsDynamic, nil
	}
	return HazardsOff, fmt.Errorf("--check-hazards %q: want strict, dynamic or off", s)
}

// newHazardChecker makes the run's checker, or nil when the mode is off or
// the graph has no Storage (then no stage reads what another writes).
//
// Strict mode holds the run to the pipeline the runtime builds: the stage
// kinds in topological order (a chain, each kind once), nats.credits
// batches queued per edge, and at most the batch pool less the lookahead
// buffers past the plan stage (stages+credits pipelined, one sequential).
func newHazardChecker(mode HazardMode, g *graph.Graph, kinds stage.Registry, storage bool) (*hazard.Checker, error) {
	if mode == HazardsOff || !storage {
		return nil, nil
	}
	if mode == HazardsDynamic {
		return hazard.New(), nil
	}
	order := make([]string, 0, len(g.Nodes))
	seen := map[string]string{}
	for _, n := range g.Nodes {
		if other, dup := seen[n.Kind]; dup {
			return nil, fmt.Errorf("--check-hazards strict needs a chain of stages of distinct kinds; stages %s and %s are both %s (use --check-hazards dynamic)", other, n.Name, n.Kind)
		}
		seen[n.Kind] = n.Name
		order = append(order, kinds.HazardName(n.Kind))
	}
	c, err := hazard.NewStrict(hazard.Strict{Order: order, Queue: g.Config.NATS.Credits, Depth: poolBuffers(g.Config, len(g.Nodes), 0)})
	if err != nil {
		return nil, fmt.Errorf("--check-hazards: %w", err)
	}
	return c, nil
}
