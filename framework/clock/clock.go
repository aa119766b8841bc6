// Package clock owns the modeled timeline of a run: given each stage's
// modeled time for each batch, it schedules the run's real dependency
// graph and answers when every (stage, batch) started and ended, the
// makespan, the iteration time once the pipeline is full, and how busy
// each stage and each device or link was.
//
// Why a schedule and not a sum: a pipelined run overlaps batches, so its
// time per batch is set by its slowest stage and by the devices and links
// stages share, not by the sum of the stages; a sequential run is the sum.
// Only scheduling the dependency graph gives both from the same per-stage
// figures, and shows where a pipeline stalls. The dependencies (DESIGN.md,
// "Two clocks") are:
//
//   - batch b at stage k starts when b has left every upstream stage of k;
//   - … when b−1 has left k (a stage works on one batch at a time, in
//     order);
//   - … when the devices and links k occupies are free;
//   - a stage with Lookahead L (ScratchPipe's plan, which must see its
//     future window) also waits for b+1 … b+L to have left its upstream
//     stages;
//   - with a Depth D, batch b enters a source stage only when b−D has left
//     every sink (the batch pool: D buffers in flight). Sequential mode is
//     the depth that admits one batch to the stages past any lookahead.
//
// Everything here is modeled time and must be reported as such. The
// package imports nothing from the framework: the runtime hands it stage
// names, upstream names, resource names and nanoseconds.
package clock

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Mode is how batches are admitted.
type Mode int

const (
	// Pipelined admits batches as the dependencies allow: a stage takes
	// batch b as soon as b is upstream of it, b−1 has left it and its
	// resources are free.
	Pipelined Mode = iota
	// Sequential admits batch b+1 to the pipeline only once b has left
	// the last stage (past any lookahead: batches a lookahead stage must
	// see are loaded ahead, as the runtime does).
	Sequential
)

func (m Mode) String() string {
	switch m {
	case Pipelined:
		return "pipelined"
	case Sequential:
		return "sequential"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// StageSpec is one stage of the graph.
type StageSpec struct {
	// Name identifies the stage (the graph's stage name or "kind/name").
	Name string
	// Upstream names the stages whose output this stage reads; none for a
	// source.
	Upstream []string
	// Resources names the devices and links the stage occupies for its
	// whole modeled time ("gpu", "host", "pcie"). Two stages that share a
	// resource never overlap in time; a stage with none never waits for
	// one.
	Resources []string
	// Lookahead is how many later batches the stage must have received
	// before it processes a batch (ScratchPipe's plan: its future window).
	Lookahead int
	// Holds, when it names a resource, is how long the stage holds that
	// resource on each batch, from the batch's start: the modeled time the
	// stage charged to that device, where the stage's own time is the
	// longest of its devices' (collect gathers the missed rows on the host
	// while the GPU gathers the victims). A batch that holds a resource for
	// 0 does not wait for it. Holds longer than the stage's time are cut to
	// it. A resource of Resources not named here is held for the stage's
	// whole time.
	Holds map[string][]int64
}

// Scheduler schedules a graph's stages over its batches.
type Scheduler struct {
	Mode Mode
	// Depth, when > 0, bounds the batches in flight: batch b enters a
	// source stage only when batch b−Depth has left every sink, as the
	// runtime's batch pool does. 0 is unbounded in Pipelined mode. In
	// Sequential mode Depth is ignored: it is 1 plus the stages' total
	// lookahead.
	Depth int
}

// Schedule is Scheduler{Mode: mode}.Schedule.
func Schedule(stages []StageSpec, durations [][]int64, mode Mode) (*Timeline, error) {
	return Scheduler{Mode: mode}.Schedule(stages, durations)
}

// ErrDeadlock is returned, wrapped, when the dependencies cannot all be
// met: a depth too small for the lookahead, so that a stage waits for a
// batch that the pool cannot admit until that stage has moved on.
var ErrDeadlock = errors.New("the schedule deadlocks")

// Schedule computes the timeline of durations[k][b], the modeled
// nanoseconds stage k spends on batch b, over the graph of stages.
//
// It is a list scheduler that simulates the run: of the (stage, batch)
// operations whose dependencies are met, the one that can start earliest
// — once its dependencies have ended and its resources are free — starts
// next. Among operations that could start at the same moment, a resource
// goes to the one that has waited longest (first come, first served, as
// a device's queue serves its streams), then to the older batch, then to
// the stage earlier in topological order. Operations never preempt one
// another. This is not an optimal schedule, which with shared resources
// is NP-hard, but the one a greedy runtime produces; "older batch first"
// alone would let a long stage that is always ready the moment its device
// frees (train) starve a stage sharing the device (plan).
func (s Scheduler) Schedule(stages []StageSpec, durations [][]int64) (*Timeline, error) {
	g, err := build(stages)
	if err != nil {
		return nil, err
	}
	if len(durations) != len(stages) {
		return nil, fmt.Errorf("clock: %d stages but durations for %d", len(stages), len(durations))
	}
	n := -1
	for k, d := range durations {
		if n >= 0 && len(d) != n {
			return nil, fmt.Errorf("clock: stage %s has durations for %d batches, stage %s for %d", stages[0].Name, n, stages[k].Name, len(d))
		}
		n = len(d)
		for b, ns := range d {
			if ns < 0 {
				return nil, fmt.Errorf("clock: stage %s batch %d: negative duration %d", stages[k].Name, b, ns)
			}
		}
	}
	if n < 0 {
		n = 0
	}
	depth := s.Depth
	switch s.Mode {
	case Sequential:
		depth = 1
		for _, st := range stages {
			depth += st.Lookahead
		}
	case Pipelined:
		if depth < 0 {
			return nil, fmt.Errorf("clock: depth %d: must be ≥ 0", depth)
		}
	default:
		return nil, fmt.Errorf("clock: unknown mode %d", s.Mode)
	}
	t := &Timeline{Stages: stages, Batches: n, Mode: s.Mode, Depth: depth, Durations: durations, g: g}
	if err := t.schedule(); err != nil {
		return nil, err
	}
	return t, nil
}

// graph is the stages resolved: upstream and downstream indices, a
// topological order, the sources and sinks, and resource indices.
type graph struct {
	up, down  [][]int
	order     []int // topological
	rank      []int // stage → position in order
	sources   []int
	sinks     []int
	resources []string
	uses      [][]int // stage → resource indices
}

// build checks the stage specs and makes their graph: edges, resources
// and a topological order.
func build(stages []StageSpec) (*graph, error) {
	idx, err := indexStages(stages)
	if err != nil {
		return nil, err
	}
	g := &graph{up: make([][]int, len(stages)), down: make([][]int, len(stages)), uses: make([][]int, len(stages))}
	res := map[string]int{}
	for k, st := range stages {
		if err := g.link(k, st, idx); err != nil {
			return nil, err
		}
		if err := g.use(k, st, res); err != nil {
			return nil, err
		}
	}
	if err := g.sort(stages); err != nil {
		return nil, err
	}
	return g, nil
}

// indexStages maps each stage's name to its index, checking names and
// lookaheads.
func indexStages(stages []StageSpec) (map[string]int, error) {
	if len(stages) == 0 {
		return nil, errors.New("clock: no stages")
	}
	idx := make(map[string]int, len(stages))
	for k, st := range stages {
		if st.Name == "" {
			return nil, fmt.Errorf("clock: stage %d has no name", k)
		}
		if _, dup := idx[st.Name]; dup {
			return nil, fmt.Errorf("clock: stage %s appears twice", st.Name)
		}
		if st.Lookahead < 0 {
			return nil, fmt.Errorf("clock: stage %s: lookahead %d: must be ≥ 0", st.Name, st.Lookahead)
		}
		idx[st.Name] = k
	}
	return idx, nil
}

// link adds stage k's edges from its upstream stages.
func (g *graph) link(k int, st StageSpec, idx map[string]int) error {
	seen := map[int]bool{}
	for _, u := range st.Upstream {
		j, ok := idx[u]
		if !ok {
			return fmt.Errorf("clock: stage %s: upstream %q is not a stage", st.Name, u)
		}
		if j == k {
			return fmt.Errorf("clock: stage %s is its own upstream", st.Name)
		}
		if !seen[j] {
			seen[j] = true
			g.up[k] = append(g.up[k], j)
			g.down[j] = append(g.down[j], k)
		}
	}
	if len(g.up[k]) == 0 && st.Lookahead > 0 {
		return fmt.Errorf("clock: stage %s: lookahead without an upstream stage", st.Name)
	}
	return nil
}

// use records the resources stage k holds, numbering new ones in res,
// and checks its holds.
func (g *graph) use(k int, st StageSpec, res map[string]int) error {
	for r, h := range st.Holds {
		if !slices.Contains(st.Resources, r) {
			return fmt.Errorf("clock: stage %s: holds %q, which is not one of its resources", st.Name, r)
		}
		for b, ns := range h {
			if ns < 0 {
				return fmt.Errorf("clock: stage %s batch %d: negative hold of %s", st.Name, b, r)
			}
		}
	}
	used := map[int]bool{}
	for _, r := range st.Resources {
		if r == "" {
			return fmt.Errorf("clock: stage %s: empty resource name", st.Name)
		}
		i, ok := res[r]
		if !ok {
			i = len(g.resources)
			res[r] = i
			g.resources = append(g.resources, r)
		}
		if !used[i] {
			used[i] = true
			g.uses[k] = append(g.uses[k], i)
		}
	}
	return nil
}

// sort orders the stages topologically (Kahn's algorithm, lowest index
// first so that a chain keeps its declared order), finding sources and
// sinks, and names a cycle.
func (g *graph) sort(stages []StageSpec) error {
	indeg := make([]int, len(stages))
	for k := range stages {
		indeg[k] = len(g.up[k])
	}
	var ready []int
	for k := range stages {
		if indeg[k] == 0 {
			ready = append(ready, k)
			g.sources = append(g.sources, k)
		}
		if len(g.down[k]) == 0 {
			g.sinks = append(g.sinks, k)
		}
	}
	for len(ready) > 0 {
		sort.Ints(ready)
		k := ready[0]
		ready = ready[1:]
		g.order = append(g.order, k)
		for _, d := range g.down[k] {
			if indeg[d]--; indeg[d] == 0 {
				ready = append(ready, d)
			}
		}
	}
	if len(g.order) != len(stages) {
		var cyc []string
		for k, d := range indeg {
			if d > 0 {
				cyc = append(cyc, stages[k].Name)
			}
		}
		return fmt.Errorf("clock: the stages %s form a cycle", strings.Join(cyc, ", "))
	}
	g.rank = make([]int, len(stages))
	for i, k := range g.order {
		g.rank[k] = i
	}
	return nil
}

// Timeline is a scheduled run: when each stage started and ended each
// batch, in modeled nanoseconds from the run's start.
type Timeline struct {
	Stages  []StageSpec
	Batches int
	Mode    Mode
	// Depth is the bound on batches in flight the schedule used (0:
	// none).
	Depth int
	// Durations are the inputs, [stage][batch].
	Durations [][]int64
	// Start and End are [stage][batch].
	Start, End [][]int64

	// held[k][i][b] is when stage k began holding its i-th resource
	// (g.uses[k][i]) on batch b.
	held [][][]int64

	g *graph
}

// op is one (stage, batch) operation.
type op struct{ k, b int }

// deps returns the operations op waits for (they must have ended).
func (t *Timeline) deps(o op, visit func(op)) {
	g := t.g
	for _, u := range g.up[o.k] {
		visit(op{u, o.b})
		for j := 1; j <= t.Stages[o.k].Lookahead && o.b+j < t.Batches; j++ {
			visit(op{u, o.b + j})
		}
	}
	if o.b > 0 {
		visit(op{o.k, o.b - 1})
	}
	if len(g.up[o.k]) == 0 && t.Depth > 0 && o.b >= t.Depth {
		for _, s := range g.sinks {
			visit(op{s, o.b - t.Depth})
		}
	}
}

func (t *Timeline) schedule() error {
	K, n := len(t.Stages), t.Batches
	t.Start, t.End = make([][]int64, K), make([][]int64, K)
	for k := range K {
		t.Start[k], t.End[k] = make([]int64, n), make([]int64, n)
	}
	if n == 0 {
		return nil
	}
	// waiting[k][b] counts the unfinished dependencies of (k, b);
	// after[k*n+b] lists what (k, b) unblocks, the reverse of deps;
	// readyAt[k][b] is the latest end among the dependencies done so far.
	waiting, readyAt := make([][]int, K), make([][]int64, K)
	after := make([][]op, K*n)
	for k := range K {
		waiting[k], readyAt[k] = make([]int, n), make([]int64, n)
		for b := range n {
			o := op{k, b}
			t.deps(o, func(d op) {
				waiting[k][b]++
				after[d.k*n+d.b] = append(after[d.k*n+d.b], o)
			})
		}
	}
	free := make([]int64, len(t.g.resources)) // when each resource is next free
	t.held = make([][][]int64, K)
	for k := range K {
		t.held[k] = make([][]int64, len(t.g.uses[k]))
		for i := range t.g.uses[k] {
			t.held[k][i] = make([]int64, n)
		}
	}
	var cand []op
	for k := range K {
		for b := range n {
			if waiting[k][b] == 0 {
				cand = append(cand, op{k, b})
			}
		}
	}
	done := 0
	for len(cand) > 0 {
		// The candidate that can start earliest; ties go to the one that
		// has waited longest (first come, first served), then to the
		// older batch, then to the earlier stage.
		best, bestStart := -1, int64(math.MaxInt64)
		for i, o := range cand {
			st := t.earliest(o, readyAt[o.k][o.b], free)
			if best < 0 || st < bestStart || (st == bestStart && t.before(readyAt, o, cand[best])) {
				best, bestStart = i, st
			}
		}
		o := cand[best]
		cand[best] = cand[len(cand)-1]
		cand = cand[:len(cand)-1]
		t.place(o, readyAt[o.k][o.b], free)
		end := t.End[o.k][o.b]
		done++
		for _, a := range after[o.k*n+o.b] {
			readyAt[a.k][a.b] = max(readyAt[a.k][a.b], end)
			if waiting[a.k][a.b]--; waiting[a.k][a.b] == 0 {
				cand = append(cand, a)
			}
		}
	}
	if done != K*n {
		// Name the oldest stuck operation: the one whose wait is circular.
		total := 0
		for _, st := range t.Stages {
			total += st.Lookahead
		}
		for b := range n {
			for _, k := range t.g.order {
				if waiting[k][b] > 0 {
					return fmt.Errorf("clock: stage %s batch %d waits for batches that depth %d admits only after it has moved on (the stages' lookahead totals %d; depth must exceed it): %w",
						t.Stages[k].Name, b, t.Depth, total, ErrDeadlock)
				}
			}
		}
	}
	return nil
}

// hold is how long stage k holds resource r on batch b, and whether that
// is a part of its time (Holds) rather than the whole of it.
func (t *Timeline) hold(k, r, b int) (ns int64, part bool) {
	d := t.Durations[k][b]
	if h, ok := t.Stages[k].Holds[t.g.resources[r]]; ok {
		if b < len(h) {
			return min(h[b], d), true
		}
		return 0, true
	}
	return d, false
}

// begin is when o starts, its dependencies having ended at ready: once
// every resource it holds for its whole time is free.
func (t *Timeline) begin(o op, ready int64, free []int64) int64 {
	for _, r := range t.g.uses[o.k] {
		if h, part := t.hold(o.k, r, o.b); h > 0 && !part {
			ready = max(ready, free[r])
		}
	}
	return ready
}

// earliest is when o can start doing anything: its start, or, for a stage
// whose every resource is held for a part of its time, the first moment
// one of those parts can run.
func (t *Timeline) earliest(o op, ready int64, free []int64) int64 {
	s := t.begin(o, ready, free)
	first, parts := int64(math.MaxInt64), false
	for _, r := range t.g.uses[o.k] {
		h, part := t.hold(o.k, r, o.b)
		if h == 0 {
			continue
		}
		if !part {
			return s
		}
		parts = true
		first = min(first, max(s, free[r]))
	}
	if !parts {
		return s
	}
	return first
}

// place schedules o: it starts once its dependencies have ended and the
// resources it holds for its whole time are free; each resource it holds
// for a part of its time (Holds) takes that part as soon as the resource
// frees, concurrently with the others (a fork and join inside the stage:
// collect's host gather beside the GPU's victim gather); it ends after
// its duration and after its last part.
func (t *Timeline) place(o op, ready int64, free []int64) {
	s := t.begin(o, ready, free)
	end := s + t.Durations[o.k][o.b]
	for i, r := range t.g.uses[o.k] {
		h, part := t.hold(o.k, r, o.b)
		at := s
		if part {
			at = max(s, free[r])
		}
		t.held[o.k][i][o.b] = at
		if h > 0 {
			free[r] = at + h
			end = max(end, at+h)
		}
	}
	t.Start[o.k][o.b], t.End[o.k][o.b] = s, end
}

// before orders operations that could start at the same time: the one
// whose dependencies were met first, then the older batch, then the stage
// earlier in topological order.
func (t *Timeline) before(readyAt [][]int64, a, b op) bool {
	if ra, rb := readyAt[a.k][a.b], readyAt[b.k][b.b]; ra != rb {
		return ra < rb
	}
	if a.b != b.b {
		return a.b < b.b
	}
	return t.g.rank[a.k] < t.g.rank[b.k]
}
