// Package serving turns per-query service demands into per-query
// latencies under load, as RecPipe measures its designs (Gupta et al.,
// MICRO 2021, Sec. 4): queries arrive as a Poisson process at a given
// QPS, each stage of the graph works on a query on devices that are
// multi-server FIFO resources (the paper's CPU serves one query per core
// on 64 cores), and a query's latency is its completion at the last stage
// minus its arrival. It reports p50/p95/p99/mean latency, the achieved
// QPS and the share of queries within an SLA, and it says "overload"
// where the offered load exceeds what the resources can serve, instead of
// printing percentiles of a queue that only grows.
//
// Two clocks use it. On the modeled clock (Network.Replay) the demands are
// the modeled per-batch stage times of a run (one batch = one query's
// candidates), cycled over tens of thousands of queries: pure arithmetic,
// seconds for 10^5 queries. On the wall clock (Measure) the arrivals are
// the times the load stage released batches and the completions the times
// they left the graph, measured.
//
// Like framework/clock, it imports nothing from the framework: the runtime
// hands it names, nanoseconds and arrival times.
package serving

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// ArrivalStat is the batch stat a paced source records on each batch: the
// query's scheduled arrival, in Unix nanoseconds. The runtime reads it
// when the batch leaves the graph, for the measured latency.
const ArrivalStat = "arrival_unix_ns"

// Poisson is the only arrival process: exponential inter-arrival times.
const Poisson = "poisson"

// streamKey separates the arrival stream from every other use of a seed.
const streamKey = 0x5e_4e_1a_77_a1_5e_5e_ed

// UnitArrivals is the arrival epochs of n queries of a Poisson process of
// rate 1 (one query per unit of time), from seed: E_1, E_1+E_2, … with
// E_i = −ln(1−U_i) and U_i the seed's i-th uniform. Scaled by 1/λ (Scale)
// they are a Poisson process of rate λ built on the same uniforms, so a
// sweep over QPS uses common random numbers: a higher QPS compresses the
// same arrival pattern, which makes every query's latency, and so p99,
// nondecreasing in QPS for FIFO queues (Lindley's recursion).
func UnitArrivals(seed uint64, n int) []float64 {
	r := rand.New(rand.NewPCG(seed, streamKey))
	out := make([]float64, max(n, 0))
	t := 0.0
	for i := range out {
		// 1−U is in (0, 1]: the logarithm is finite.
		t += -math.Log(1 - r.Float64())
		out[i] = t
	}
	return out
}

// Scale returns unit-rate epochs (UnitArrivals) as nanoseconds at qps
// queries per second.
func Scale(unit []float64, qps float64) []float64 {
	out := make([]float64, len(unit))
	for i, u := range unit {
		out[i] = u * 1e9 / qps
	}
	return out
}

// Paced is implemented by a source stage that releases its batches at
// Poisson arrival times (the load stage with arrival: poisson), so that
// the runtime can report the measured latencies against the rate it was
// offered, the stream's seed and the latency target.
type Paced interface {
	Pacing() Pacing
}

// Pacing is what a paced source was asked for: a zero QPS is a source
// that is not paced.
type Pacing struct {
	QPS   float64
	Seed  uint64
	SLAMs float64
}

// Pacer releases queries at the arrival times of a Poisson stream of rate
// qps: query i at the pacer's epoch plus its unit epoch over qps. The
// epoch is the first Wait, so a run's set-up is not counted as queueing.
type Pacer struct {
	unit  []float64
	qps   float64
	epoch time.Time
}

// NewPacer is a pacer for n queries at qps from seed (UnitArrivals).
func NewPacer(seed uint64, n int, qps float64) *Pacer {
	return &Pacer{unit: UnitArrivals(seed, n), qps: qps}
}

// Wait returns query i's arrival time, once it has come: at once for a
// query already due (the system is behind: it queued), else after
// sleeping until then or until ctx ends. Queries are waited for in order.
func (p *Pacer) Wait(ctx context.Context, i int) (time.Time, error) {
	if i < 0 || i >= len(p.unit) {
		return time.Time{}, fmt.Errorf("query %d is past the stream's %d arrivals", i, len(p.unit))
	}
	if p.epoch.IsZero() {
		p.epoch = time.Now()
	}
	at := p.epoch.Add(time.Duration(p.unit[i] * 1e9 / p.qps))
	if d := time.Until(at); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
	return at, nil
}
