package config

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"time"
)

// Placement puts named stages of the graph in flowrun worker processes,
// possibly on other hosts (docs/scale-out.md). Nil (no placement key)
// runs every stage in the run's own process.
type Placement struct {
	// Workers are the worker processes by name, each with the stages it
	// runs; a stage placed on no worker runs in the run's process.
	Workers map[string]PlacedWorker `mapstructure:"workers"`
	// Wait is how long the run waits for every worker to join (a Go
	// duration, e.g. 60s); empty means DefaultPlacementWait.
	Wait string `mapstructure:"wait"`
	// Silence is how long a joined worker may go without a heartbeat (one
	// every 150 ms) before the run fails, naming it (a Go duration, at
	// least 300ms); empty means DefaultPlacementSilence.
	Silence string `mapstructure:"silence"`
	// Host labels the run's own host; empty means its host name. Arrays
	// cross an edge by value (chunked NATS messages) where its two stages
	// are on hosts of different labels, by shared-memory handle otherwise.
	Host string `mapstructure:"host"`
}

// PlacedWorker is one worker process of a placement.
type PlacedWorker struct {
	// Stages are the graph's stages the worker runs.
	Stages []string `mapstructure:"stages"`
	// Host labels the worker's host; empty means the host name the worker
	// reports. A label other than the run's makes every edge between the
	// worker and the run carry arrays by value, even on one machine.
	Host string `mapstructure:"host"`
}

// DefaultPlacementWait is how long a run waits for its workers to join
// when placement.wait is empty.
const DefaultPlacementWait = 60 * time.Second

// DefaultPlacementSilence is how long a worker may be silent when
// placement.silence is empty: a killed worker fails its run within a
// second.
const DefaultPlacementSilence = 750 * time.Millisecond

// minSilence keeps placement.silence above two heartbeats.
const minSilence = 300 * time.Millisecond

// SilenceFor is placement.silence as a duration (DefaultPlacementSilence
// when empty); Validate has checked it parses.
func (p *Placement) SilenceFor() time.Duration {
	if p == nil || p.Silence == "" {
		return DefaultPlacementSilence
	}
	d, err := time.ParseDuration(p.Silence)
	if err != nil || d < minSilence {
		return DefaultPlacementSilence
	}
	return d
}

var workerName = regexp.MustCompile(`^[a-z0-9_][a-z0-9_-]*$`)

// ReservedWorker is the name the run itself has among its workers (its
// heartbeat's subject); no worker may take it.
const ReservedWorker = "run"

// WaitFor is placement.wait as a duration (DefaultPlacementWait when
// empty); Validate has checked it parses.
func (p *Placement) WaitFor() time.Duration {
	if p == nil || p.Wait == "" {
		return DefaultPlacementWait
	}
	d, err := time.ParseDuration(p.Wait)
	if err != nil || d <= 0 {
		return DefaultPlacementWait
	}
	return d
}

// WorkerOf is the worker a stage is placed on, "" for the run's process.
func (p *Placement) WorkerOf(stage string) string {
	if p == nil {
		return ""
	}
	for name, w := range p.Workers {
		for _, s := range w.Stages {
			if s == stage {
				return name
			}
		}
	}
	return ""
}

// WorkerNames are the placement's workers, sorted.
func (p *Placement) WorkerNames() []string {
	if p == nil {
		return nil
	}
	names := make([]string, 0, len(p.Workers))
	for n := range p.Workers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Validate checks the placement's own keys.
func (p Placement) Validate() error {
	var errs []error
	if len(p.Workers) == 0 {
		errs = append(errs, At("workers", errors.New("a placement needs at least one worker, e.g. workers: {w1: {stages: [plan]}}")))
	}
	if p.Wait != "" {
		if d, err := time.ParseDuration(p.Wait); err != nil || d <= 0 {
			errs = append(errs, At("wait", fmt.Errorf("%q is not a positive duration (e.g. 60s)", p.Wait)))
		}
	}
	if p.Silence != "" {
		if d, err := time.ParseDuration(p.Silence); err != nil || d < minSilence {
			errs = append(errs, At("silence", fmt.Errorf("%q is not a duration of at least %v", p.Silence, minSilence)))
		}
	}
	for _, name := range p.WorkerNames() {
		if !workerName.MatchString(name) {
			errs = append(errs, At(joinPath("workers", name), fmt.Errorf("worker name %q: use lower-case letters, digits, '_' and '-'", name)))
		}
		if name == ReservedWorker {
			errs = append(errs, At(joinPath("workers", name), fmt.Errorf("worker name %q is the run's own (its heartbeat's name); choose another", name)))
		}
		if len(p.Workers[name].Stages) == 0 {
			errs = append(errs, At(joinPath("workers", name, "stages"), errors.New("a worker runs at least one stage")))
		}
	}
	return errors.Join(errs...)
}

// validatePlacement checks that every placed stage is a stage of the
// graph, placed once.
func (c *Config) validatePlacement() []error {
	p := c.Placement
	if p == nil {
		return nil
	}
	var errs []error
	on := map[string]string{}
	for _, name := range p.WorkerNames() {
		for i, s := range p.Workers[name].Stages {
			key := joinPath("placement", "workers", name, "stages", fmt.Sprint(i))
			if _, ok := c.Stages[s]; !ok {
				errs = append(errs, At(key, fmt.Errorf("%q is not a stage of the graph", s)))
			}
			if other, dup := on[s]; dup {
				errs = append(errs, At(key, fmt.Errorf("stage %q is placed on both %s and %s", s, other, name)))
			}
			on[s] = name
		}
	}
	return errs
}
