package serving

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Stage is one stage of the graph a query goes through.
type Stage struct {
	// Name identifies the stage.
	Name string
	// Upstream names the stages whose output this stage reads; none for a
	// source, which a query enters at its arrival.
	Upstream []string
	// Demand is the stage's service time for a query, in nanoseconds:
	// query q takes Demand[q mod len(Demand)] (the run's batches, cycled).
	Demand []int64
	// Resources are the devices and links the stage works on. A query at
	// the stage takes one server of each for its hold (below), each part
	// starting as soon as a server of its resource is free, as
	// framework/clock runs a stage's parts; the stage ends after its
	// Demand and after its last part. A stage with no resources is a pure
	// delay: any number of queries at once.
	Resources []string
	// Holds, per resource, is how long a query holds a server of it,
	// cycled like Demand: the modeled time the stage charged to that
	// device. A resource not named here is held for the whole Demand. A
	// hold of 0 takes no server at all.
	Holds map[string][]int64
}

// Network is the stages of a graph and the servers of its resources.
type Network struct {
	Stages []Stage
	// Servers is how many queries each resource serves at once (c of a
	// multi-server FIFO queue); a resource not named has one server.
	Servers map[string]int
	// Split says that each of a resource's c servers is 1/c of the device
	// the demands were charged on: a query holds a server for c times its
	// hold (a whole-chip profile split into per-core servers). Without
	// it a server is the whole device the demands describe.
	Split bool
}

// The values of config's serving.demand, Network.Split's two readings.
const (
	DemandCharged = "charged"
	DemandSplit   = "split"
)

// Replay is a network's response to an arrival stream.
type Replay struct {
	// Arrival and Completion are each query's arrival and the time it left
	// the last stage (every sink), in nanoseconds.
	Arrival, Completion []float64
	// Utilisation is each resource's offered load per server, λ·E[hold]/c
	// over the replayed queries, at the stream's nominal rate; ≥ 1 is
	// overload. Bottleneck is the resource of the highest, CapacityQPS
	// the rate at which it reaches 1 (+Inf with no resource).
	Utilisation map[string]float64
	Bottleneck  string
	CapacityQPS float64
	// Servers is the servers of every resource the stages use.
	Servers map[string]int
}

// resolved is a network checked and indexed for a replay.
type resolved struct {
	n        *Network
	order    []int   // topological
	down     [][]int // stage → downstream stages
	ups      []int   // stage → number of upstream stages
	sinks    []int
	batches  int
	holds    [][][]int64 // stage → its resources → hold per batch (nil: Demand)
	resIdx   [][]int     // stage → resource index
	resNames []string
}

// Replay runs queries arriving at arrivals (nanoseconds, nondecreasing)
// through the network. Each resource is a FIFO queue with its servers:
// parts are served in the order they became ready (ties: the older
// query, then the stage earlier in topological order), each on the
// server that frees first. Queues are unbounded: nothing is dropped, so
// under overload latency grows with every query, which Report says.
// qps is the stream's nominal rate, for the utilisation.
func (n *Network) Replay(arrivals []float64, qps float64) (*Replay, error) {
	r, err := n.resolve()
	if err != nil {
		return nil, err
	}
	for i := 1; i < len(arrivals); i++ {
		if !(arrivals[i] >= arrivals[i-1]) {
			return nil, fmt.Errorf("serving: arrival %d (%g ns) is before arrival %d (%g ns)", i, arrivals[i], i-1, arrivals[i-1])
		}
	}
	out := &Replay{Arrival: arrivals, Completion: r.run(arrivals)}
	out.Utilisation, out.Bottleneck, out.CapacityQPS, out.Servers = r.load(len(arrivals), qps)
	return out, nil
}

// resolve checks the stages (names, upstream, demands of one length,
// servers ≥ 1) and indexes them.
func (n *Network) resolve() (*resolved, error) {
	if len(n.Stages) == 0 {
		return nil, errors.New("serving: no stages")
	}
	idx := map[string]int{}
	for k, s := range n.Stages {
		if _, dup := idx[s.Name]; dup {
			return nil, fmt.Errorf("serving: stage %q is named twice", s.Name)
		}
		idx[s.Name] = k
	}
	r := &resolved{n: n, down: make([][]int, len(n.Stages)), ups: make([]int, len(n.Stages)), batches: -1,
		holds: make([][][]int64, len(n.Stages)), resIdx: make([][]int, len(n.Stages))}
	res := map[string]int{}
	for k, s := range n.Stages {
		if err := r.stage(k, s, idx, res); err != nil {
			return nil, err
		}
	}
	for name, c := range n.Servers {
		if c < 1 {
			return nil, fmt.Errorf("serving: resource %q has %d servers: must be ≥ 1", name, c)
		}
	}
	if err := r.sort(); err != nil {
		return nil, err
	}
	return r, nil
}

// stage checks and indexes stage k.
func (r *resolved) stage(k int, s Stage, idx, res map[string]int) error {
	if len(s.Demand) == 0 || (r.batches >= 0 && len(s.Demand) != r.batches) {
		return fmt.Errorf("serving: stage %s has demands for %d batches, want %d (at least 1, the same for every stage)", s.Name, len(s.Demand), max(r.batches, 1))
	}
	r.batches = len(s.Demand)
	for b, d := range s.Demand {
		if d < 0 {
			return fmt.Errorf("serving: stage %s batch %d: negative demand %d", s.Name, b, d)
		}
	}
	for _, u := range s.Upstream {
		j, ok := idx[u]
		if !ok {
			return fmt.Errorf("serving: stage %s reads unknown stage %q", s.Name, u)
		}
		r.down[j] = append(r.down[j], k)
		r.ups[k]++
	}
	for name, h := range s.Holds {
		if !slices.Contains(s.Resources, name) {
			return fmt.Errorf("serving: stage %s holds %q, which is not one of its resources", s.Name, name)
		}
		if h != nil && len(h) != r.batches {
			return fmt.Errorf("serving: stage %s holds %s for %d batches, its demands are for %d", s.Name, name, len(h), r.batches)
		}
		if slices.Min(append([]int64{0}, h...)) < 0 {
			return fmt.Errorf("serving: stage %s: a negative hold of %s", s.Name, name)
		}
	}
	for _, name := range s.Resources {
		i, ok := res[name]
		if !ok {
			i = len(r.resNames)
			res[name] = i
			r.resNames = append(r.resNames, name)
		}
		// A device a stage names twice (score's host_device and
		// compute_device both the CPU) is one resource of the stage.
		if slices.Contains(r.resIdx[k], i) {
			continue
		}
		r.resIdx[k] = append(r.resIdx[k], i)
		r.holds[k] = append(r.holds[k], s.Holds[name])
	}
	return nil
}

// sort orders the stages topologically (Kahn), naming a cycle's stages.
func (r *resolved) sort() error {
	left := append([]int(nil), r.ups...)
	var queue []int
	for k, u := range left {
		if u == 0 {
			queue = append(queue, k)
		}
	}
	for len(queue) > 0 {
		k := queue[0]
		queue = queue[1:]
		r.order = append(r.order, k)
		if len(r.down[k]) == 0 {
			r.sinks = append(r.sinks, k)
		}
		for _, j := range r.down[k] {
			if left[j]--; left[j] == 0 {
				queue = append(queue, j)
			}
		}
	}
	if len(r.order) < len(r.n.Stages) {
		var names []string
		for k, u := range left {
			if u > 0 {
				names = append(names, r.n.Stages[k].Name)
			}
		}
		return fmt.Errorf("serving: the stages %v form a cycle", names)
	}
	return nil
}

// servers is the servers of resource i.
func (r *resolved) servers(i int) int {
	if c, ok := r.n.Servers[r.resNames[i]]; ok {
		return c
	}
	return 1
}

// hold is how long query q holds a server of the j-th resource of stage
// k: c times as long with Split.
func (r *resolved) hold(k, j, q int) int64 {
	h := r.n.Stages[k].Demand[q%r.batches]
	if hs := r.holds[k][j]; hs != nil {
		h = hs[q%r.batches]
	}
	if r.n.Split {
		h *= int64(r.servers(r.resIdx[k][j]))
	}
	return h
}

// load is every resource's utilisation λ·E[hold]/c over the first
// queries queries, the bottleneck and the capacity it allows.
func (r *resolved) load(queries int, qps float64) (map[string]float64, string, float64, map[string]int) {
	busy := make([]float64, len(r.resNames)) // Σ hold over queries, ns
	for k := range r.n.Stages {
		for j, i := range r.resIdx[k] {
			// Whole cycles, then the rest: no pass over every query.
			var cycle, rest float64
			for b := 0; b < r.batches; b++ {
				h := float64(r.hold(k, j, b))
				cycle += h
				if b < queries%r.batches {
					rest += h
				}
			}
			busy[i] += cycle*float64(queries/r.batches) + rest
		}
	}
	util := map[string]float64{}
	servers := map[string]int{}
	capacity, bottleneck := math.Inf(1), ""
	for i, name := range r.resNames {
		c := r.servers(i)
		servers[name] = c
		if queries == 0 {
			continue
		}
		mean := busy[i] / float64(queries) / 1e9 // seconds per query
		util[name] = qps * mean / float64(c)
		if mean > 0 {
			if capQ := float64(c) / mean; capQ < capacity || (capQ == capacity && name < bottleneck) {
				capacity, bottleneck = capQ, name
			}
		}
	}
	return util, bottleneck, capacity, servers
}

// run is the replay proper: an event list of (query, stage) operations
// taken in the order they become ready, each resource a set of servers
// (a min-heap of the times they free). It returns each query's
// completion.
func (r *resolved) run(arrivals []float64) []float64 {
	K, Q := len(r.n.Stages), len(arrivals)
	rank := make([]int, K)
	for p, k := range r.order {
		rank[k] = p
	}
	pools := make([]serverPool, len(r.resNames))
	for i := range pools {
		pools[i] = make(serverPool, r.servers(i))
	}
	left := make([]int32, Q*K)    // upstream stages not yet done
	ready := make([]float64, Q*K) // latest upstream end
	ends := make([]float64, Q)
	events := &opHeap{rank: rank}
	for q := range Q {
		for k := range K {
			left[q*K+k] = int32(r.ups[k])
			if r.ups[k] == 0 {
				ready[q*K+k] = arrivals[q]
				heap.Push(events, op{at: arrivals[q], q: q, k: k})
			}
		}
	}
	for events.Len() > 0 {
		o := heap.Pop(events).(op)
		end := o.at + float64(r.n.Stages[o.k].Demand[o.q%r.batches])
		for j, i := range r.resIdx[o.k] {
			h := r.hold(o.k, j, o.q)
			if h == 0 {
				continue
			}
			end = max(end, pools[i].take(o.at, float64(h)))
		}
		if len(r.down[o.k]) == 0 {
			ends[o.q] = max(ends[o.q], end)
		}
		for _, d := range r.down[o.k] {
			x := o.q*K + d
			ready[x] = max(ready[x], end)
			if left[x]--; left[x] == 0 {
				heap.Push(events, op{at: ready[x], q: o.q, k: d})
			}
		}
	}
	return ends
}

// serverPool is the times a resource's servers free, a min-heap.
type serverPool []float64

// take serves a part ready at t for h on the server that frees first,
// and returns when the part ends.
func (p serverPool) take(t, h float64) float64 {
	start := max(t, p[0])
	p[0] = start + h
	// Sift the root down: the pool stays a min-heap.
	i := 0
	for {
		l, m := 2*i+1, i
		if l < len(p) && p[l] < p[m] {
			m = l
		}
		if l+1 < len(p) && p[l+1] < p[m] {
			m = l + 1
		}
		if m == i {
			return start + h
		}
		p[i], p[m] = p[m], p[i]
		i = m
	}
}

// op is a query at a stage, ready at at.
type op struct {
	at   float64
	q, k int
}

// opHeap orders operations by ready time, then query, then the stage's
// topological rank: FIFO at every resource.
type opHeap struct {
	ops  []op
	rank []int
}

func (h *opHeap) Len() int { return len(h.ops) }
func (h *opHeap) Less(i, j int) bool {
	a, b := h.ops[i], h.ops[j]
	if a.at != b.at {
		return a.at < b.at
	}
	if a.q != b.q {
		return a.q < b.q
	}
	return h.rank[a.k] < h.rank[b.k]
}
func (h *opHeap) Swap(i, j int) { h.ops[i], h.ops[j] = h.ops[j], h.ops[i] }
func (h *opHeap) Push(x any)    { h.ops = append(h.ops, x.(op)) }
func (h *opHeap) Pop() any {
	o := h.ops[len(h.ops)-1]
	h.ops = h.ops[:len(h.ops)-1]
	return o
}
