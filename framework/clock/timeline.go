package clock

import (
	"fmt"
	"slices"
	"strings"
)

// Makespan is when the last operation ended: the run's modeled time.
func (t *Timeline) Makespan() int64 {
	var m int64
	for _, ends := range t.End {
		for _, e := range ends {
			m = max(m, e)
		}
	}
	return m
}

// Completion is when batch b left the graph: the latest end over the
// sinks.
func (t *Timeline) Completion(b int) int64 {
	var c int64
	for _, s := range t.g.sinks {
		c = max(c, t.End[s][b])
	}
	return c
}

// Admission is when batch b entered the graph: the earliest start over
// the sources.
func (t *Timeline) Admission(b int) int64 {
	a := t.Start[t.g.sources[0]][b]
	for _, s := range t.g.sources[1:] {
		a = min(a, t.Start[s][b])
	}
	return a
}

// Latency is how long batch b was in the graph, from admission to
// completion.
func (t *Timeline) Latency(b int) int64 { return t.Completion(b) - t.Admission(b) }

// MeanIteration is Makespan / Batches: the modeled time per batch over the
// whole run, the pipeline's fill and drain included. It is the figure to
// compare with a measured run's wall time per batch.
func (t *Timeline) MeanIteration() float64 {
	if t.Batches == 0 {
		return 0
	}
	return float64(t.Makespan()) / float64(t.Batches)
}

// SteadyIteration is the mean time between completions once the first
// batch has completed: (Completion(n−1) − Completion(0)) / (n−1). It
// leaves the fill out (the first batch's trip through every stage), so it
// approaches the rate the pipeline sustains: with constant stage times and
// no shared resource it is exactly the slowest stage's time, and for a
// sequential run the sum of the stages. On a short run it can come out
// below BoundIteration, because work on later batches done before the
// first completion is not in the interval; compare it with
// BoundIteration, or run many more batches than the pipeline holds. With
// one batch it is the makespan.
func (t *Timeline) SteadyIteration() float64 {
	switch t.Batches {
	case 0:
		return 0
	case 1:
		return float64(t.Makespan())
	}
	return float64(t.Completion(t.Batches-1)-t.Completion(0)) / float64(t.Batches-1)
}

// BoundIteration is the busiest stage's or resource's time per batch
// (Bottleneck): no schedule of these durations sustains a shorter
// iteration, since that stage or resource does one batch's work at a time.
// A pipelined run's SteadyIteration approaches it when nothing else (a
// depth too small, a lookahead) holds the pipeline back.
func (t *Timeline) BoundIteration() float64 {
	if t.Batches == 0 {
		return 0
	}
	_, busy := t.Bottleneck()
	return float64(busy) / float64(t.Batches)
}

// Busy is the modeled time stage k spent working, over all batches.
func (t *Timeline) Busy(k int) int64 {
	var s int64
	for _, d := range t.Durations[k] {
		s += d
	}
	return s
}

// Utilisation is Busy(k) / Makespan: the fraction of the run stage k was
// working; 1 for a pipeline's bottleneck when nothing else limits it.
func (t *Timeline) Utilisation(k int) float64 {
	if m := t.Makespan(); m > 0 {
		return float64(t.Busy(k)) / float64(m)
	}
	return 0
}

// Resources lists the devices and links the stages occupy, in order of
// first mention.
func (t *Timeline) Resources() []string { return append([]string(nil), t.g.resources...) }

// ResourceBusy is the modeled time a device or link was occupied: the sum
// of the times the stages held it (their Holds, or their whole times),
// which never overlap there.
func (t *Timeline) ResourceBusy(name string) int64 {
	var s int64
	if r := slices.Index(t.g.resources, name); r >= 0 {
		t.holdsOf(r, func(_, _ int, _, h int64) { s += h })
	}
	return s
}

// holdsOf calls visit for every time a stage held resource r (by index):
// stage k on batch b, from at for h > 0.
func (t *Timeline) holdsOf(r int, visit func(k, b int, at, h int64)) {
	for k, uses := range t.g.uses {
		for i, u := range uses {
			if u != r {
				continue
			}
			for b := range t.Batches {
				if h, _ := t.hold(k, r, b); h > 0 {
					visit(k, b, t.held[k][i][b], h)
				}
			}
		}
	}
}

// Bottleneck names the busiest stage or resource and its busy time: the
// one that bounds the iteration (BoundIteration). A resource wins a tie
// with a stage, since it holds that stage's time and maybe more.
func (t *Timeline) Bottleneck() (string, int64) {
	name, busy := "", int64(-1)
	for _, r := range t.g.resources {
		if b := t.ResourceBusy(r); b > busy {
			name, busy = r, b
		}
	}
	for k, st := range t.Stages {
		if b := t.Busy(k); b > busy {
			name, busy = st.Name, b
		}
	}
	return name, busy
}

// Usage is how busy one stage or resource was.
type Usage struct {
	Name        string  `json:"name"`
	BusyNs      int64   `json:"busy_ns"`
	Utilisation float64 `json:"utilisation"`
}

// Summary is the timeline's figures as data, for results. Every figure
// is modeled.
type Summary struct {
	Mode              string  `json:"mode"`
	Depth             int     `json:"depth,omitempty"`
	Batches           int     `json:"batches"`
	MakespanNs        int64   `json:"makespan_ns"`
	MeanIterationNs   float64 `json:"mean_iteration_ns"`
	SteadyIterationNs float64 `json:"steady_iteration_ns"`
	BoundIterationNs  float64 `json:"bound_iteration_ns"`
	// Bottleneck is the busiest stage or resource.
	Bottleneck string  `json:"bottleneck"`
	Stages     []Usage `json:"stages"`
	Resources  []Usage `json:"resources,omitempty"`
}

// Summary returns the timeline's figures.
func (t *Timeline) Summary() Summary {
	m := t.Makespan()
	frac := func(busy int64) float64 {
		if m == 0 {
			return 0
		}
		return float64(busy) / float64(m)
	}
	bottleneck, _ := t.Bottleneck()
	s := Summary{
		Mode: t.Mode.String(), Depth: t.Depth, Batches: t.Batches, MakespanNs: m,
		MeanIterationNs: t.MeanIteration(), SteadyIterationNs: t.SteadyIteration(),
		BoundIterationNs: t.BoundIteration(), Bottleneck: bottleneck,
	}
	for k, st := range t.Stages {
		s.Stages = append(s.Stages, Usage{Name: st.Name, BusyNs: t.Busy(k), Utilisation: frac(t.Busy(k))})
	}
	for _, r := range t.g.resources {
		b := t.ResourceBusy(r)
		s.Resources = append(s.Resources, Usage{Name: r, BusyNs: b, Utilisation: frac(b)})
	}
	return s
}

// batchMark is the character a batch shows as in a Gantt chart.
func batchMark(b int) byte {
	const marks = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	return marks[b%len(marks)]
}

// Gantt draws the timeline as text, width columns of modeled time: a row
// per stage showing which batch it works on (0–9, a–z, A–Z, then again
// from 0), '.' when idle, and a row per resource showing the stage that
// holds it (its index in Stages, same marks). A column shows the
// operation that covers most of it, so operations shorter than a column
// can vanish; widen it, or read Start and End, to see them.
func (t *Timeline) Gantt(width int) string {
	width = max(width, 10)
	m := t.Makespan()
	var sb strings.Builder
	fmt.Fprintf(&sb, "modeled timeline (%s", t.Mode)
	if t.Depth > 0 {
		fmt.Fprintf(&sb, ", depth %d", t.Depth)
	}
	fmt.Fprintf(&sb, "), %d batches, makespan %s, steady iteration %s (bound %s), one column = %s\n",
		t.Batches, ns(float64(m)), ns(t.SteadyIteration()), ns(t.BoundIteration()), ns(float64(m)/float64(width)))
	if m == 0 || t.Batches == 0 {
		return sb.String()
	}
	label := 0
	for _, st := range t.Stages {
		label = max(label, len(st.Name))
	}
	for _, r := range t.g.resources {
		label = max(label, len(r)+2)
	}
	row := func(name string, ops []span) {
		cells := []byte(strings.Repeat(".", width))
		best := make([]int64, width)
		for _, o := range ops {
			if o.end <= o.start {
				continue
			}
			c0 := int(o.start * int64(width) / m)
			c1 := int((o.end*int64(width) - 1) / m)
			for c := c0; c <= c1 && c < width; c++ {
				lo := max(o.start, int64(c)*m/int64(width))
				hi := min(o.end, int64(c+1)*m/int64(width))
				if hi-lo > best[c] {
					best[c], cells[c] = hi-lo, o.mark
				}
			}
		}
		fmt.Fprintf(&sb, "%-*s |%s|\n", label, name, cells)
	}
	for k, st := range t.Stages {
		ops := make([]span, t.Batches)
		for b := range t.Batches {
			ops[b] = span{t.Start[k][b], t.End[k][b], batchMark(b)}
		}
		row(st.Name, ops)
	}
	for r, name := range t.g.resources {
		var ops []span
		t.holdsOf(r, func(k, _ int, at, h int64) { ops = append(ops, span{at, at + h, batchMark(k)}) })
		row("["+name+"]", ops)
	}
	return sb.String()
}

type span struct {
	start, end int64
	mark       byte
}

// ns formats modeled nanoseconds for people.
func ns(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.3gs", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.3gms", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.3gµs", v/1e3)
	}
	return fmt.Sprintf("%.3gns", v)
}

// String lists every operation, one line each: stage, batch, start, end
// (modeled ns), in stage then batch order.
func (t *Timeline) String() string {
	var sb strings.Builder
	for k, st := range t.Stages {
		for b := range t.Batches {
			fmt.Fprintf(&sb, "%s\t%d\t%d\t%d\n", st.Name, b, t.Start[k][b], t.End[k][b])
		}
	}
	return sb.String()
}
