package serving

import (
	"fmt"
	"math"
	"sort"
)

// The clocks a Report is on.
const (
	// Modeled: demands from device cost models replayed on arrival times
	// (Network.Replay). Never a measurement.
	Modeled = "modeled"
	// Measured: wall-clock arrivals and completions of a real run.
	Measured = "measured"
)

// Report is what serving a stream of queries came to, on one clock.
type Report struct {
	// Clock is Modeled or Measured.
	Clock string `json:"clock"`
	// Arrival is the arrival process (Poisson), Seed its seed.
	Arrival string `json:"arrival"`
	Seed    uint64 `json:"seed"`
	// Queries is how many queries were served.
	Queries int `json:"queries"`
	// OfferedQPS is the arrival rate asked for; ArrivalQPS the rate of
	// the seeded stream itself, (n−1)/(last − first arrival), which
	// differs from it by sampling.
	OfferedQPS float64 `json:"offered_qps"`
	ArrivalQPS float64 `json:"arrival_qps"`
	// AchievedQPS is queries served per second: n / (last completion −
	// first arrival). Below ArrivalQPS by the last query's latency in a
	// stable system, pinned at capacity in an overloaded one.
	AchievedQPS float64 `json:"achieved_qps"`
	// LatencyMs is the per-query latency (completion − arrival),
	// nearest-rank percentiles, in ms; nil under overload, where no
	// steady state exists and any percentile is an artefact of how many
	// queries were sent.
	LatencyMs *Percentiles `json:"latency_ms,omitempty"`
	// SLAMs and WithinSLA: the share of queries whose latency is at most
	// SLAMs (nil without an SLA or under overload).
	SLAMs     float64  `json:"sla_ms,omitempty"`
	WithinSLA *float64 `json:"within_sla,omitempty"`
	// Overload, when set, says the offered load exceeds what the system
	// serves, and why.
	Overload *Overload `json:"overload,omitempty"`
	// LatencyGrowth is the mean latency of the last quarter of the queries
	// (by arrival) over that of the first quarter: about 1 in a steady
	// state, growing with n under overload (the queue grows).
	LatencyGrowth float64 `json:"latency_growth,omitempty"`
	// Modeled only: each resource's servers and utilisation (λ·E[hold]/c
	// at OfferedQPS), the bottleneck and the QPS at which it saturates,
	// and how many of the run's batches the demands were cycled from.
	Servers       map[string]int     `json:"servers,omitempty"`
	Utilisation   map[string]float64 `json:"utilisation,omitempty"`
	Bottleneck    string             `json:"bottleneck,omitempty"`
	CapacityQPS   float64            `json:"capacity_qps,omitempty"`
	DemandBatches int                `json:"demand_batches,omitempty"`
}

// Percentiles of the per-query latency, in ms (nearest rank).
type Percentiles struct {
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
}

// Overload is why a Report withholds its percentiles.
type Overload struct {
	Reason string `json:"reason"`
	// LastLatencyMs is the latency of the last query to arrive: how far
	// behind the queue had fallen when the stream ended.
	LastLatencyMs float64 `json:"last_latency_ms"`
	// QueueAtHalf and QueueAtEnd are the queries in the system (arrived,
	// not completed) when the middle and the last query arrived: a queue
	// that grows.
	QueueAtHalf int `json:"queue_at_half"`
	QueueAtEnd  int `json:"queue_at_end"`
}

// MeasuredShortfall is the share of the arrival rate a measured run may
// fall short by before it is called overloaded: n/(last completion −
// first arrival) is below the arrival rate by one latency even in a
// stable run, and a short run's last latency is a noticeable part of it.
const MeasuredShortfall = 0.10

// Options are a report's labels.
type Options struct {
	Clock   string
	Seed    uint64
	QPS     float64 // offered
	SLAMs   float64 // 0: none
	Batches int     // modeled: the batches the demands cycle over
}

// ModeledReport is the report of a replay: overloaded when a resource's
// utilisation is at least 1 (λ ≥ c/E[hold]: no steady state exists).
func ModeledReport(rp *Replay, o Options) *Report {
	o.Clock = Modeled
	rep := summarize(rp.Arrival, rp.Completion, o)
	rep.Servers, rep.Utilisation, rep.Bottleneck = rp.Servers, rp.Utilisation, rp.Bottleneck
	rep.DemandBatches = o.Batches
	if !math.IsInf(rp.CapacityQPS, 1) {
		rep.CapacityQPS = rp.CapacityQPS
	}
	if u := rp.Utilisation[rp.Bottleneck]; rp.Bottleneck != "" && u >= 1 {
		rep.overloaded(fmt.Sprintf("%s is at %.0f%% of its %d server(s) at %g QPS offered: it serves at most %.4g QPS (modeled)",
			rp.Bottleneck, 100*u, rp.Servers[rp.Bottleneck], o.QPS, rp.CapacityQPS), rp.Arrival, rp.Completion)
	}
	return rep
}

// Measure is the report of a measured run: arrivals and completions in
// nanoseconds on one clock (any origin), one pair per query. It is
// overloaded when it served below the arrival rate by more than
// MeasuredShortfall: the queue grew while it ran.
func Measure(arrivals, completions []float64, o Options) *Report {
	o.Clock = Measured
	rep := summarize(arrivals, completions, o)
	if rep.Queries > 1 && rep.AchievedQPS < (1-MeasuredShortfall)*rep.ArrivalQPS {
		rep.overloaded(fmt.Sprintf("served %.4g QPS of the %.4g that arrived (measured): the queue grew while it ran",
			rep.AchievedQPS, rep.ArrivalQPS), arrivals, completions)
	}
	return rep
}

// overloaded marks the report overloaded and withholds its percentiles.
func (rep *Report) overloaded(reason string, arrivals, completions []float64) {
	n := len(arrivals)
	rep.Overload = &Overload{Reason: reason}
	if n > 0 {
		rep.Overload.LastLatencyMs = (completions[n-1] - arrivals[n-1]) / 1e6
		rep.Overload.QueueAtHalf = inSystem(arrivals, completions, n/2)
		rep.Overload.QueueAtEnd = inSystem(arrivals, completions, n-1)
	}
	rep.LatencyMs, rep.WithinSLA = nil, nil
}

// summarize is the figures both clocks share.
func summarize(arrivals, completions []float64, o Options) *Report {
	n := len(arrivals)
	rep := &Report{Clock: o.Clock, Arrival: Poisson, Seed: o.Seed, Queries: n, OfferedQPS: o.QPS, SLAMs: o.SLAMs}
	if n == 0 {
		return rep
	}
	lat := make([]float64, n)
	last := 0.0
	for i := range lat {
		lat[i] = completions[i] - arrivals[i]
		last = max(last, completions[i])
	}
	if n > 1 && arrivals[n-1] > arrivals[0] {
		rep.ArrivalQPS = float64(n-1) / ((arrivals[n-1] - arrivals[0]) / 1e9)
	}
	if span := last - arrivals[0]; span > 0 {
		rep.AchievedQPS = float64(n) / (span / 1e9)
	}
	if q := n / 4; q > 0 {
		if first := mean(lat[:q]); first > 0 {
			rep.LatencyGrowth = mean(lat[n-q:]) / first
		}
	}
	p := percentiles(lat)
	rep.LatencyMs = &p
	if o.SLAMs > 0 {
		within := 0
		for _, l := range lat {
			if l <= o.SLAMs*1e6 {
				within++
			}
		}
		share := float64(within) / float64(n)
		rep.WithinSLA = &share
	}
	return rep
}

// inSystem is the queries that had arrived and not yet completed when
// query i arrived (itself included).
func inSystem(arrivals, completions []float64, i int) int {
	at, n := arrivals[i], 0
	for j := 0; j <= i; j++ {
		if completions[j] > at || j == i {
			n++
		}
	}
	return n
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// percentiles of latencies in ns, in ms, nearest rank (as results.json's
// per-stage percentiles).
func percentiles(ns []float64) Percentiles {
	s := append([]float64(nil), ns...)
	sort.Float64s(s)
	q := func(p float64) float64 {
		i := max(int(math.Ceil(p*float64(len(s))))-1, 0)
		return s[i] / 1e6
	}
	return Percentiles{P50: q(0.50), P95: q(0.95), P99: q(0.99), Mean: mean(s) / 1e6, Max: s[len(s)-1] / 1e6}
}
