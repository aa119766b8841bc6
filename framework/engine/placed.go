package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/placement"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/stage"
)

// The run's side of a placement (config.Placement, docs/scale-out.md):
// the placed stages are nodes without a stage here (remote), the run
// waits for their workers to join before its sources start, watches them
// while it runs (a worker that fails or falls silent fails the run,
// naming it), and takes their measures before its results.

// checkPlacement refuses what a placed run cannot do: the hazard
// checker, checkpoints and records need every stage's state in this
// process.
func (r *run) checkPlacement() error {
	if r.opts.Graph.Config.Placement == nil || r.workerStages != nil {
		return nil
	}
	switch {
	case r.opts.CheckHazards != HazardsOff:
		return errors.New("placement: --check-hazards needs every stage in the run's process (drop the placement or the flag)")
	case r.opts.Checkpoint.Every > 0 || r.opts.Checkpoint.Resume != nil:
		return errors.New("placement: checkpoints need every stage's state in the run's process (drop the placement or --checkpoint-every/--resume)")
	case r.opts.Record != nil:
		return errors.New("placement: --record needs the planning stage in the run's process (drop the placement or --record)")
	}
	return nil
}

// placed reports whether gn is not created here: in the run's process a
// stage the placement puts on a worker (added as a remote node), in a
// worker a stage it was not given. A source or a sink cannot be placed:
// the run's process owns the batch pool they take buffers from and give
// them back to.
func (r *run) placed(gn graph.Node, f stage.Factory) (bool, error) {
	if r.workerStages != nil {
		return !r.workerStages[gn.Name], nil
	}
	w := r.opts.Graph.Config.Placement.WorkerOf(gn.Name)
	switch {
	case w == "":
		return false, nil
	case f.Source():
		return false, fmt.Errorf("placement: stage %s is a source and stays with the run, which owns the batch pool", gn.Name)
	case len(gn.Out) == 0:
		return false, fmt.Errorf("placement: stage %s is a sink and stays with the run, which completes each batch", gn.Name)
	}
	r.addNode(&node{Node: gn, id: fmt.Sprintf("%s/%s", gn.Kind, gn.Name), remote: w})
	return true, nil
}

// stageSettings completes a stage's settings: the named model it ranks
// with, in the run's process. A worker hands its stages no host tables,
// Storage or model, which live in the run's process: a kind that needs
// them is refused by its factory, naming what it lacks. Its metrics are
// the worker's own, sent to the run with its report.
func (r *run) stageSettings(gn graph.Node, set stage.Settings) (stage.Settings, error) {
	if r.workerStages == nil {
		return r.modelSettings(gn, set)
	}
	if name := modelNameOf(gn); name != "" {
		return set, fmt.Errorf("stage %s ranks with model %q, whose tables live in the run's process: it cannot be placed on a worker", gn.Name, name)
	}
	set.Tables, set.Storage, set.Plugins.Model, set.Hazards = nil, nil, nil, nil
	return set, nil
}

// runHost is the run's host label: placement.host, Options.Host, or the
// host name.
func (r *run) runHost() string {
	if h := r.opts.Graph.Config.Placement.Host; h != "" {
		return h
	}
	if r.opts.Host != "" {
		return r.opts.Host
	}
	h, _ := os.Hostname()
	return h
}

// awaitWorkers admits the placement's workers and waits for all of them
// (placement.wait), before any batch is made; it returns what their
// stages look ahead, for the batch pool.
func (r *run) awaitWorkers(ctx context.Context) (int, error) {
	cfg := r.opts.Graph.Config
	if cfg.Placement == nil || r.workerStages != nil {
		return 0, nil
	}
	var err error
	if r.coord, err = placement.NewCoordinator(r.opts.Bus, r.id, cfg, r.total, r.runHost()); err != nil {
		return 0, err
	}
	hint := func(w string) string { return "worker " + w }
	if r.opts.WorkerHint != nil {
		hint = func(w string) string { return r.opts.WorkerHint(w, r.id) }
	}
	if err := r.coord.Await(ctx, hint); err != nil {
		return 0, err
	}
	ahead := 0
	joined := r.coord.Joined()
	for _, n := range r.nodes {
		if n.remote != "" {
			n.remoteAhead = joined[n.remote].Lookahead[n.Name]
			ahead += n.remoteAhead
		}
	}
	r.hosts = r.coord.Hosts()
	return ahead, nil
}

// gatherReports takes what each worker's stages measured, once every
// batch has left the graph (each worker finishes its stages first).
func (r *run) gatherReports(ctx context.Context) error {
	if r.coord == nil {
		return nil
	}
	reports, err := r.coord.Reports(ctx)
	if err != nil {
		return err
	}
	r.traffic = r.transport.counts()
	decoded := make(map[string]*workerReport, len(reports))
	for _, w := range r.opts.Graph.Config.Placement.WorkerNames() {
		var wr workerReport
		if err := json.Unmarshal(reports[w], &wr); err != nil {
			return fmt.Errorf("worker %s: report: %w", w, err)
		}
		decoded[w] = &wr
		wr.addTo(r.metrics)
		for subject, c := range wr.Traffic {
			r.traffic[subject] = c
		}
	}
	for _, n := range r.nodes {
		if n.remote == "" {
			continue
		}
		m, ok := decoded[n.remote].Measures[n.id]
		if !ok {
			return fmt.Errorf("worker %s: its report has no measures of stage %s", n.remote, n.id)
		}
		n.setMeasures(m)
	}
	return nil
}

// workerReport is what a worker's stages measured (per stage, as a
// checkpoint keeps it) and the figures they reported (cache hits,
// shadows, ...), which the run adds to its own.
type workerReport struct {
	Measures map[string]measures      `json:"measures"`
	Series   map[string][]stage.Point `json:"series,omitempty"`
	Totals   map[string]float64       `json:"totals,omitempty"`
	Values   map[string]float64       `json:"values,omitempty"`
	Shadows  []results.Shadow         `json:"shadows,omitempty"`
	// Traffic is what the worker sent by value, per graph subject.
	Traffic map[string]edgeCounts `json:"traffic,omitempty"`
}

// edgeCounts is what crossed one edge by value, as its producer counted.
type edgeCounts struct {
	Batches, Bytes, Messages, Ns int64
}

func newWorkerReport(m *stage.Metrics) *workerReport {
	wr := &workerReport{Measures: map[string]measures{}, Shadows: m.Shadows()}
	wr.Series, wr.Totals, wr.Values = m.Snapshot()
	return wr
}

// addTo adds the worker's figures to the run's.
func (wr *workerReport) addTo(m *stage.Metrics) {
	for _, name := range slices.Sorted(maps.Keys(wr.Series)) {
		for _, p := range wr.Series[name] {
			m.Append(name, p.Seq, p.Value)
		}
	}
	for name, v := range wr.Totals {
		m.Add(name, v)
	}
	for name, v := range wr.Values {
		m.Set(name, v)
	}
	for _, s := range wr.Shadows {
		m.AddShadow(s)
	}
}

// placementResults is where the placed stages ran and what crossed each
// edge between processes; nil without a placement.
func (r *run) placementResults() *results.Placement {
	if r.coord == nil {
		return nil
	}
	p := &results.Placement{Host: r.runHost(), Workers: map[string]results.PlacedWorker{}}
	for name, j := range r.coord.Joined() {
		p.Workers[name] = results.PlacedWorker{Host: j.Host, PID: j.PID, Stages: j.Stages}
	}
	place := r.opts.Graph.Config.Placement
	for _, gn := range r.opts.Graph.Nodes {
		for _, out := range gn.Out {
			to := r.consumerOf(out)
			if to == "" || place.WorkerOf(gn.Name) == place.WorkerOf(to) {
				continue
			}
			c := r.traffic[out]
			p.Edges = append(p.Edges, results.Edge{Subject: out, From: gn.Name, To: to, ByValue: r.byValue(gn.Name, to),
				Batches: c.Batches, Bytes: c.Bytes, Messages: c.Messages, SendMs: float64(c.Ns) / 1e6})
		}
	}
	return p
}
