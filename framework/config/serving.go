package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Serving turns on serving under load on the modeled clock (RecPipe
// Sec. 4, framework/serving, docs/serving.md): after the run, Queries
// queries arriving as a Poisson process at QPS are replayed through the
// graph's stages, each query's service demand at a stage being the
// modeled time the stage took on one of the run's batches (a batch is one
// query's candidates; the run's batches are cycled), each device a FIFO
// resource of Servers servers. Nil (no serving key) replays nothing.
type Serving struct {
	// QPS is the offered load, queries per second (modeled).
	QPS float64 `mapstructure:"qps"`
	// Queries is how many queries are replayed; 0 means DefaultQueries.
	Queries int `mapstructure:"queries"`
	// Seed seeds the arrival stream (on both clocks); 0 means the graph's
	// seed.
	Seed uint64 `mapstructure:"seed"`
	// SLAMs is the latency target in ms: the report gives the share of
	// queries within it. 0: no target.
	SLAMs float64 `mapstructure:"sla_ms"`
	// Servers is how many queries each device (a graph device name, or
	// link:DEVICE for the link an exchange stage holds) serves at once;
	// a device not named has one server. RecPipe's Cascade Lake serves one
	// query per core: 64.
	Servers map[string]int `mapstructure:"servers"`
	// SweepQPS, when set, replays the same queries at each of these rates
	// too (one seed: common random numbers), for p99 against QPS in one
	// run.
	SweepQPS []float64 `mapstructure:"sweep_qps"`
	// Demand says what one server of a device is: charged (the default:
	// a server is the whole device the stage charged, so c servers serve
	// c queries each at the profile's full speed) or split (each server
	// is 1/c of the device: a query holds it for c × the time charged, a
	// whole-chip profile cut into per-core servers).
	Demand string `mapstructure:"demand"`
	// Warmup is how many of the run's first batches the replay leaves
	// out: their demands are not cycled (a device whose caches are
	// provisioned from the first batches' keys, as rpaccel's static cache
	// is, prices those batches cold). 0: every batch.
	Warmup int `mapstructure:"warmup"`
	// QueueOn maps a device to the device whose servers it queues on in
	// the replay: devices that price parts of one chip (an accelerator's
	// one embedding gather unit, priced by one device per stage) share
	// that chip's servers. A device not named is its own resource.
	QueueOn map[string]string `mapstructure:"queue_on"`
}

// The values of serving.demand.
var ServingDemands = []string{"charged", "split"}

// DefaultQueries is the queries replayed when serving.queries is 0: the
// "tens of thousands" RecPipe simulates (Sec. 4).
const DefaultQueries = 20000

// Limits of the serving section: beyond them a replay's memory (a few
// words per query and stage) or a resource's server heap stop being
// small, and nothing RecPipe models needs more.
const (
	MaxServingQueries = 10_000_000
	MaxServers        = 1 << 20
	MaxSweep          = 256
)

// QueriesOrDefault is Queries, or DefaultQueries when it is 0.
func (s *Serving) QueriesOrDefault() int {
	if s.Queries == 0 {
		return DefaultQueries
	}
	return s.Queries
}

// SeedOr is Seed, or graphSeed when Seed is 0.
func (s *Serving) SeedOr(graphSeed uint64) uint64 {
	if s == nil || s.Seed == 0 {
		return graphSeed
	}
	return s.Seed
}

// Validate checks the section's own keys; that each of servers names a
// device of the graph is checked by Config.Validate, which knows them.
func (s Serving) Validate() error {
	var errs []error
	if !(s.QPS > 0) || math.IsInf(s.QPS, 0) {
		errs = append(errs, At("qps", fmt.Errorf("must be a finite number of queries per second > 0, got %g", s.QPS)))
	}
	if s.Queries < 0 || s.Queries > MaxServingQueries {
		errs = append(errs, At("queries", fmt.Errorf("must be from 1 to %d (0: %d), got %d", MaxServingQueries, DefaultQueries, s.Queries)))
	}
	if !(s.SLAMs >= 0) || math.IsInf(s.SLAMs, 0) {
		errs = append(errs, At("sla_ms", fmt.Errorf("must be a finite number of ms ≥ 0 (0: no SLA), got %g", s.SLAMs)))
	}
	for i, q := range s.SweepQPS {
		if !(q > 0) || math.IsInf(q, 0) {
			errs = append(errs, At(joinPath("sweep_qps", fmt.Sprint(i)), fmt.Errorf("must be a finite number of queries per second > 0, got %g", q)))
		}
	}
	if n := len(s.SweepQPS); n > MaxSweep {
		errs = append(errs, At("sweep_qps", fmt.Errorf("has %d rates: at most %d", n, MaxSweep)))
	}
	if s.Demand != "" && !slices.Contains(ServingDemands, s.Demand) {
		errs = append(errs, At("demand", fmt.Errorf("unknown demand %q (allowed: %s)", s.Demand, strings.Join(ServingDemands, ", "))))
	}
	if s.Warmup < 0 {
		errs = append(errs, At("warmup", fmt.Errorf("must be ≥ 0 batches, got %d", s.Warmup)))
	}
	for _, name := range sortedKeys(s.Servers) {
		if c := s.Servers[name]; c < 1 || c > MaxServers {
			errs = append(errs, At(joinPath("servers", name), fmt.Errorf("must be from 1 to %d servers, got %d", MaxServers, c)))
		}
	}
	return errors.Join(errs...)
}

// validateServing checks that serving.servers names the graph's devices
// (or their links, link:DEVICE).
func (c *Config) validateServing() []error {
	if c.Serving == nil {
		return nil
	}
	var errs []error
	// The run replays its batches from warmup on: all of them must not be
	// left out (batches 0 is a run without end, whose count is unknown).
	if all := c.Dataset.Batches + c.Dataset.EvalBatches; c.Dataset.Batches > 0 && c.Serving.Warmup >= all {
		errs = append(errs, At(joinPath("serving", "warmup"),
			fmt.Errorf("%d leaves none of the run's %d batches (dataset.batches + eval_batches) to replay", c.Serving.Warmup, all)))
	}
	for _, name := range sortedKeys(c.Serving.QueueOn) {
		to := c.Serving.QueueOn[name]
		for _, d := range []string{name, to} {
			if _, ok := c.Devices[d]; !ok {
				errs = append(errs, At(joinPath("serving", "queue_on", name),
					fmt.Errorf("%q is not a device of the graph (devices: %s)", d, strings.Join(sortedKeys(c.Devices), ", "))))
			}
		}
		if _, chained := c.Serving.QueueOn[to]; chained || to == name {
			errs = append(errs, At(joinPath("serving", "queue_on", name),
				fmt.Errorf("queues on %q, which must be a device that queues on its own servers", to)))
		}
	}
	for _, name := range sortedKeys(c.Serving.Servers) {
		dev := strings.TrimPrefix(name, "link:")
		if _, ok := c.Devices[dev]; !ok {
			errs = append(errs, At(joinPath("serving", "servers", name),
				fmt.Errorf("%q is not a device of the graph (devices: %s; a link is link:DEVICE)", name, strings.Join(sortedKeys(c.Devices), ", "))))
		}
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
