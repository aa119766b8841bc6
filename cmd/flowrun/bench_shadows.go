package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/flowrun/flowrun/framework/stages/exchange"
	"github.com/flowrun/flowrun/framework/stages/plan"
	"github.com/flowrun/flowrun/framework/stages/shadow"
	"sort"

	"github.com/flowrun/flowrun/framework/bench"
	"github.com/flowrun/flowrun/framework/config"
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
	cfg, _, err := config.Load(path, sets)
	if err != nil {
		return nil, err
	}
	wiring, err := shadowWiring(cfg)
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
// plan, its outputs with the shadow's subject added, and the shadow
// stage's keys but its policies.
type shadowSetup struct {
	producer string
	outs     []string
	stage    map[string]any
}

// shadowWiring finds cfg's plan stage and the stage that feeds it; the
// shadow's link is the first exchange stage's device (none: no modeled
// link time).
func shadowWiring(cfg *config.Config) (shadowSetup, error) {
	names := make([]string, 0, len(cfg.Stages))
	for n := range cfg.Stages {
		names = append(names, n)
	}
	sort.Strings(names)
	var planStage, device string
	for _, n := range names {
		st := cfg.Stages[n]
		if st.Kind == string(plan.Kind) && planStage == "" {
			planStage = n
		}
		if d, ok := st.Options["device"].(string); ok && st.Kind == string(exchange.Kind) && device == "" {
			device = d
		}
	}
	if planStage == "" {
		return shadowSetup{}, errors.New("the graph has no plan stage to shadow")
	}
	in := cfg.Stages[planStage].In
	for _, n := range names {
		for _, out := range cfg.Stages[n].Out {
			if out == in {
				st := map[string]any{"kind": string(shadow.Kind), "in": sweepShadowSubject}
				if device != "" {
					st["device"] = device
				}
				outs := append(append([]string(nil), cfg.Stages[n].Out...), sweepShadowSubject)
				return shadowSetup{producer: n, outs: outs, stage: st}, nil
			}
		}
	}
	return shadowSetup{}, fmt.Errorf("no stage publishes %s, which plan stage %s reads", in, planStage)
}
