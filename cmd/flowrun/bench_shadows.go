package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/flowrun/flowrun/framework/bench"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/stages/shadow"
)

// The stage and subject bench --shadows adds to a graph.
const (
	sweepShadowStage   = "sweep-shadow"
	sweepShadowSubject = "sweep-shadowed"
)

// CheckShadowed checks the graph at path with sets and a shadow stage fed
// what its plan stage is fed (its producer publishes one more subject),
// listing the cache each point makes, in order (bench.ShadowRunner).
func (b benchRunner) CheckShadowed(path string, sets []string, points [][]string) (bench.Graph, error) {
	g, err := validateGraph(path, sets, false)
	if err != nil {
		return nil, err
	}
	wiring, err := shadowWiring(g)
	if err != nil {
		return nil, err
	}
	var policies []map[string]any
	for _, pt := range points {
		pc, _, err := config.Load(path, append(append([]string(nil), sets...), pt...))
		if err != nil {
			return nil, err
		}
		p := map[string]any{"plugin": pc.Cache.Plugin, "size": pc.Cache.Size}
		if pc.Cache.SHA256 != "" {
			p["sha256"] = pc.Cache.SHA256
		}
		if len(pc.Cache.Options) > 0 {
			p["options"] = pc.Cache.Options
		}
		policies = append(policies, p)
	}
	wiring.stage["policies"] = policies
	stage, err := json.Marshal(wiring.stage)
	if err != nil {
		return nil, err
	}
	outs, err := json.Marshal(wiring.outs)
	if err != nil {
		return nil, err
	}
	// JSON is YAML: --set takes both values as they are.
	shadowed := append(append([]string(nil), sets...),
		"stages::"+wiring.producer+"::out="+string(outs),
		"stages::"+sweepShadowStage+"="+string(stage))
	return b.Check(path, shadowed)
}

// shadowSetup is where a shadow stage goes in a graph: the stage feeding
// the planning stage, its outputs with the shadow's subject added, and
// the shadow stage's keys but its policies.
type shadowSetup struct {
	producer string
	outs     []string
	stage    map[string]any
}

// linkUser is a stage config whose modeled resources name a device's link
// (stage configs declare them for the modeled clock: "link:DEVICE").
type linkUser interface{ ModeledResources() []string }

// shadowWiring finds g's planning stage, the one that serves the cache
// policy its plan requests and windows (its config declares
// graph.Windowed), and the stage that feeds it; the shadow's link is the
// first link a stage's config declares among its modeled resources (none:
// no modeled link time). Stages are found by what their configs declare,
// never by kind.
func shadowWiring(g *graph.Graph) (shadowSetup, error) {
	var planner *graph.Node
	device := ""
	for i, n := range g.Nodes {
		if _, ok := n.Options.(graph.Windowed); ok && planner == nil {
			planner = &g.Nodes[i]
		}
		if l, ok := n.Options.(linkUser); ok && device == "" {
			for _, r := range l.ModeledResources() {
				if d, ok := strings.CutPrefix(r, "link:"); ok {
					device = d
					break
				}
			}
		}
	}
	if planner == nil {
		return shadowSetup{}, errors.New("the graph has no plan stage to shadow (no stage serves the cache policy its windows)")
	}
	sub, ok := g.Subjects[planner.In]
	if !ok || sub.Producer == "" {
		return shadowSetup{}, fmt.Errorf("no stage publishes %s, which plan stage %s reads", planner.In, planner.Name)
	}
	for _, n := range g.Nodes {
		if n.Name == sub.Producer {
			st := map[string]any{"kind": string(shadow.Kind), "in": sweepShadowSubject}
			if device != "" {
				st["device"] = device
			}
			outs := append(append([]string(nil), n.Out...), sweepShadowSubject)
			return shadowSetup{producer: n.Name, outs: outs, stage: st}, nil
		}
	}
	return shadowSetup{}, fmt.Errorf("stage %s, which publishes %s, is not in the graph", sub.Producer, planner.In)
}
