package engine

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/serving"
)

// servedLog is the wall-clock arrival and completion of every batch that
// carried an arrival (serving.ArrivalStat: a paced source released it as
// a query), in Unix nanoseconds, in the order the batches completed.
type servedLog struct {
	mu                  sync.Mutex
	seq                 []uint64
	arrival, completion []int64
}

// recordServed notes, when batch h leaves the graph, its completion
// against the arrival its source recorded on it.
func (r *run) recordServed(h *batch.Header) {
	at, ok := h.Stats[serving.ArrivalStat]
	if !ok {
		return
	}
	now := time.Now().UnixNano()
	l := &r.served
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq = append(l.seq, h.Seq)
	l.arrival = append(l.arrival, at)
	l.completion = append(l.completion, now)
}

// servingResults puts the run's serving reports in res: measured when a
// paced source released its batches at arrival times, modeled when the
// graph has a serving section and its stages charged devices.
func (r *run) servingResults(res *results.Results, cfg *config.Config) error {
	measured := r.measuredServing()
	modeled, sweep, err := r.modeledServing(cfg)
	if err != nil {
		return err
	}
	if measured != nil || modeled != nil {
		res.Serving = &results.Serving{Modeled: modeled, Measured: measured, ModeledSweep: sweep}
	}
	return nil
}

// measuredServing is the report of the batches' measured latencies, in
// arrival order; nil when no batch carried an arrival.
func (r *run) measuredServing() *serving.Report {
	l := &r.served
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.seq) == 0 {
		return nil
	}
	n := len(l.seq)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	// Arrivals are in sequence order (the source paces batches in order).
	sort.SliceStable(order, func(a, b int) bool { return l.seq[order[a]] < l.seq[order[b]] })
	base := l.arrival[order[0]]
	arr, done := make([]float64, n), make([]float64, n)
	for i, j := range order {
		arr[i], done[i] = float64(l.arrival[j]-base), float64(l.completion[j]-base)
	}
	o := serving.Options{}
	for _, nd := range r.nodes {
		if p, ok := nd.stage.(serving.Paced); ok && p.Pacing().QPS > 0 {
			pc := p.Pacing()
			o.QPS, o.Seed, o.SLAMs = pc.QPS, pc.Seed, pc.SLAMs
		}
	}
	return serving.Measure(arr, done, o)
}

// modeledServing replays the graph's serving section on the run's modeled
// per-batch stage times: one query per batch, the run's batches cycled
// over serving.queries queries, at serving.qps and at each rate of
// serving.sweep_qps (the same arrival stream scaled: common random
// numbers). Nil without a serving section, or when no stage charged a
// device (nothing was modeled).
func (r *run) modeledServing(cfg *config.Config) (*serving.Report, []*serving.Report, error) {
	s := cfg.Serving
	charged := false
	for _, n := range r.nodes {
		charged = charged || len(n.modNs) > 0
	}
	if s == nil || !charged || r.total <= 0 {
		return nil, nil, nil
	}
	if s.Warmup >= r.total {
		return nil, nil, fmt.Errorf("serving.warmup %d leaves none of the run's %d batches to replay", s.Warmup, r.total)
	}
	net := r.servingNetwork(s)
	seed := s.SeedOr(cfg.Seed)
	unit := serving.UnitArrivals(seed, s.QueriesOrDefault())
	var reps []*serving.Report
	for _, qps := range append([]float64{s.QPS}, s.SweepQPS...) {
		rp, err := net.Replay(serving.Scale(unit, qps), qps)
		if err != nil {
			return nil, nil, fmt.Errorf("modeled serving at %g QPS: %w", qps, err)
		}
		reps = append(reps, serving.ModeledReport(rp, serving.Options{Seed: seed, QPS: qps, SLAMs: s.SLAMs, Batches: r.total - s.Warmup}))
	}
	if len(reps) == 1 {
		return reps[0], nil, nil
	}
	return reps[0], reps[1:], nil
}

// servingNetwork is the graph as serving stages, as scheduleModeled
// makes it clock stages: upstream by subject, each stage on the devices
// it names (or its ModeledResources), each device held for the time the
// stage charged to it when it said, its demand per batch the stage's
// modeled time.
func (r *run) servingNetwork(s *config.Serving) *serving.Network {
	producer := map[string]string{}
	for _, n := range r.nodes {
		for _, out := range n.Out {
			producer[out] = n.Name
		}
	}
	net := &serving.Network{Servers: r.servers(s), Split: s.Demand == serving.DemandSplit}
	for _, n := range r.nodes {
		res, byDevice := stageResources(n.Options)
		st := serving.Stage{Name: n.Name, Resources: res, Demand: n.modBySeq[s.Warmup:r.total]}
		if n.In != "" {
			st.Upstream = []string{producer[n.In]}
		}
		if byDevice && n.devBySeq != nil {
			st.Holds = make(map[string][]int64, len(res))
			for _, d := range res {
				if h := n.devBySeq[d]; h != nil {
					st.Holds[d] = h[s.Warmup:r.total]
				} else {
					// Charged nothing there: it holds no server of it.
					st.Holds[d] = make([]int64, r.total-s.Warmup)
				}
			}
		}
		st.Resources, st.Holds = queueOn(s.QueueOn, st.Resources, st.Holds)
		net.Stages = append(net.Stages, st)
	}
	return net
}

// queueOn puts each resource a device of serving.queue_on names on the
// device it queues on; a stage holding two devices that share one
// resource holds it for the sum of their times.
func queueOn(to map[string]string, res []string, holds map[string][]int64) ([]string, map[string][]int64) {
	if len(to) == 0 {
		return res, holds
	}
	var out []string
	var merged map[string][]int64
	if holds != nil {
		merged = make(map[string][]int64, len(holds))
	}
	for _, d := range res {
		q := d
		if t, ok := to[d]; ok {
			q = t
		}
		if !slices.Contains(out, q) {
			out = append(out, q)
		}
		if h, ok := holds[d]; ok {
			if prev, ok := merged[q]; ok {
				sum := slices.Clone(prev)
				for i := range sum {
					sum[i] += h[i]
				}
				h = sum
			}
			merged[q] = h
		}
	}
	return out, merged
}

// servers is how many queries each device serves at once: what its
// profile says (device.Profile.Servers, e.g. a 64-core CPU's 64), unless
// the graph's serving.servers names the device.
func (r *run) servers(s *config.Serving) map[string]int {
	out := map[string]int{}
	for _, u := range r.uses {
		if name, ok := strings.CutPrefix(u.Role, "devices."); ok && u.Servers > 0 {
			out[name] = int(u.Servers)
		}
	}
	maps.Copy(out, s.Servers)
	return out
}
