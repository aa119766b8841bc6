// Package graph turns a validated config into the dataflow graph that runs:
// stages as nodes, NATS subjects as edges, in topological order.
//
// Build checks what the config package cannot check alone, in the order of
// the OpenTelemetry Collector's pipeline builder: references (stage kinds
// and their options, devices, plugins), then nodes and subjects (sources,
// dangling and doubly used subjects, feedback), then a topological sort
// that names any cycle not declared as feedback, then the batch contract:
// every field a stage consumes has a producer upstream (FieldKinds). Every
// problem is reported at once, located in the graph file. Last, on a graph
// that has passed all of that, a Plugins that can (PluginOptions) tries
// each plugin's options.
//
// graph knows stage kinds and plugins only through the Kinds and Plugins
// interfaces its caller provides; it must not import the stage kinds, the
// plugin host or the runtime.
package graph

import (
	"container/heap"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/data"
)

// Kinds knows the stage kinds.
type Kinds interface {
	Known(kind string) bool
	// Names lists the known kinds, for "unknown stage kind" messages.
	Names() []string
	// IsSource reports whether a kind starts the graph: it has no input
	// subject (load).
	IsSource(kind string) bool
	// DecodeOptions decodes and validates a stage's own options over the
	// kind's defaults, rejecting unknown keys; errors carry relative paths
	// via config.At.
	DecodeOptions(kind string, options map[string]any) (any, error)
}

// Plugins checks a plugin reference without launching anything.
type Plugins interface {
	// Check reports whether ref names a plugin of the kind (one of
	// PluginModel, PluginKernel, PluginCache, PluginDevice) that can be
	// loaded.
	Check(kind string, ref string) error
}

// PluginOptions is what a Plugins may also do: try the options of every
// plugin the graph names, as a run will configure them, without launching
// anything. Build calls it last, and only on a graph that has passed every
// other check, since a plugin's configuration can depend on the built graph
// (the cache's pipeline windows). Its errors are located with config.At,
// as Build's own.
type PluginOptions interface {
	CheckOptions(g *Graph) error
}

// The plugin kinds passed to Plugins.Check.
const (
	PluginModel  = "model"
	PluginKernel = "kernel"
	PluginCache  = "cache"
	PluginDevice = "device"
)

// DeviceUser is implemented by a decoded stage config that places work on
// named devices; Build checks that each name is defined under devices.
type DeviceUser interface {
	DeviceNames() []string
}

// Graph is a checked dataflow graph.
type Graph struct {
	// Config is the config the graph was built from.
	Config *config.Config
	// Nodes are the stages in topological order: sources first, then each
	// stage after the stages it reads from (feedback edges aside), ties
	// broken by name so that the order is the same on every run.
	Nodes []Node
	// Subjects are the edges by subject name.
	Subjects map[string]Subject
}

// Node is one stage.
type Node struct {
	// Name is the stage's key under stages.
	Name string
	// Kind is the stage kind.
	Kind string
	// In is the subject the stage reads; empty for a source.
	In string
	// Out are the subjects it publishes each batch to; empty for a sink.
	Out []string
	// Feedback are those of Out that close a declared cycle.
	Feedback []string
	// Options is the stage's config as decoded by its kind.
	Options any
	// Produces and Consumes are the batch fields the stage declares
	// (FieldKinds); nil when the kinds declare none.
	Produces, Consumes []batch.Field
}

// Subject is one edge: exactly one stage publishes to it and exactly one
// reads it, which is what flowrun's credit-based flow control relies on.
type Subject struct {
	Name     string
	Producer string
	Consumer string
	// Feedback reports that the subject closes a declared cycle: it runs
	// against the topological order, so its consumer must not wait for it
	// before the first batch.
	Feedback bool
}

// Sources returns the nodes that read no subject, in order.
func (g *Graph) Sources() []Node {
	var out []Node
	for _, n := range g.Nodes {
		if n.In == "" {
			out = append(out, n)
		}
	}
	return out
}

// Sinks returns the nodes that publish to no subject, in order.
func (g *Graph) Sinks() []Node {
	var out []Node
	for _, n := range g.Nodes {
		if len(n.Out) == 0 {
			out = append(out, n)
		}
	}
	return out
}

// Node returns the node named name.
func (g *Graph) Node(name string) (Node, bool) {
	for _, n := range g.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return Node{}, false
}

// Build checks cfg against the stage kinds and the plugins and returns its
// graph. cfg is expected to have passed Validate (config.Load does that);
// src, which may be nil, locates errors in the graph file. The error joins
// every problem found, each a *config.Error.
//
// A nil plugins skips the plugin checks, for tools that inspect a graph
// where its plugins are not installed.
func Build(cfg *config.Config, src *config.Source, kinds Kinds, plugins Plugins) (*Graph, error) {
	if cfg == nil {
		return nil, errors.New("build graph: no config")
	}
	if kinds == nil {
		return nil, errors.New("build graph: no stage kinds")
	}
	b := &builder{
		cfg:       cfg,
		kinds:     kinds,
		plugins:   plugins,
		names:     sortedKeys(cfg.Stages),
		options:   map[string]any{},
		producers: map[string][]endpoint{},
		consumers: map[string][]endpoint{},
		feedback:  map[string]bool{},
	}
	b.checkReferences()
	b.nodesAndSubjects()
	order := b.sort()
	b.checkContract()
	b.checkScratchpad(order)
	b.checkDatasetFile()
	if err := errors.Join(b.errs...); err != nil {
		return nil, src.Annotate(err)
	}
	g := b.result(order)
	if po, ok := plugins.(PluginOptions); ok {
		if err := po.CheckOptions(g); err != nil {
			return nil, src.Annotate(err)
		}
	}
	return g, nil
}

// checkDatasetFile opens a batch file named by dataset.path (dataset.kind
// file) and checks it against the dataset section, as the load stage will
// at run time, so that flowrun validate catches a missing file or a
// mismatched shape before a run. Opening reads only the header; no batch
// is read. The errors are placed at the dataset key to change: a shape
// mismatch at its key (Open places it), anything wrong with the file
// itself (missing, not a batch file, damaged) at dataset.path.
func (b *builder) checkDatasetFile() {
	d := b.cfg.Dataset
	if d.Kind != "file" || d.Path == "" {
		return
	}
	f, err := data.Open(d.Path, d)
	if err == nil {
		f.Close()
		return
	}
	var located *config.Error
	switch {
	case errors.Is(err, fs.ErrNotExist):
		err = config.At("dataset::path", fmt.Errorf("no batch file %s (make one with flowrun gen or flowrun convert)", d.Path))
	case !errors.As(err, &located):
		err = config.At("dataset::path", err)
	}
	b.errs = append(b.errs, err)
}

// endpoint is one end of a subject: the stage and where the subject is
// written in it, to place errors on the exact list item.
type endpoint struct {
	stage string
	path  string
}

type builder struct {
	cfg     *config.Config
	kinds   Kinds
	plugins Plugins
	names   []string // stage names, sorted
	errs    []error

	options   map[string]any        // decoded options by stage
	producers map[string][]endpoint // by subject
	consumers map[string][]endpoint // by subject
	feedback  map[string]bool       // subjects declared as feedback by their producer
	fields    map[string]declared   // batch fields by stage (checkContract)
}

func (b *builder) fail(path string, err error) {
	b.errs = append(b.errs, config.At(path, err))
}

func stagePath(name string, keys ...string) string {
	return strings.Join(append([]string{"stages", name}, keys...), config.KeyDelimiter)
}

// checkReferences checks what each stage and plugin reference names: the
// stage kind, the kind's options, the devices they use, the plugins.
func (b *builder) checkReferences() {
	for _, name := range b.names {
		st := b.cfg.Stages[name]
		if !b.kinds.Known(st.Kind) {
			b.fail(stagePath(name, "kind"), fmt.Errorf("unknown stage kind %q (known: %s)", st.Kind, strings.Join(sorted(b.kinds.Names()), ", ")))
			continue
		}
		opts, err := b.kinds.DecodeOptions(st.Kind, st.Options)
		if err != nil {
			b.fail(stagePath(name), err)
			continue
		}
		b.options[name] = opts
		if du, ok := opts.(DeviceUser); ok {
			seen := map[string]bool{}
			for _, dev := range du.DeviceNames() {
				if _, ok := b.cfg.Devices[dev]; ok || seen[dev] {
					continue
				}
				seen[dev] = true
				b.fail(stagePath(name, deviceKey(st.Options, dev)),
					fmt.Errorf("unknown device %q (defined under devices: %s)", dev, strings.Join(sortedKeys(b.cfg.Devices), ", ")))
			}
		}
	}
	if b.plugins == nil {
		return
	}
	check := func(path, kind, ref string) {
		if ref == "" {
			return // config.Validate reports a missing reference
		}
		if err := b.plugins.Check(kind, ref); err != nil {
			b.fail(path, err)
		}
	}
	check("model::plugin", PluginModel, b.cfg.Model.Plugin)
	check("kernel::plugin", PluginKernel, b.cfg.Kernel.Plugin)
	check("cache::plugin", PluginCache, b.cfg.Cache.Plugin)
	for _, name := range sortedKeys(b.cfg.Devices) {
		check("devices::"+name+"::plugin", PluginDevice, b.cfg.Devices[name].Plugin)
	}
}

// deviceKey finds the option that names dev, so that the error points at
// its line: a stage may place work on several devices under keys of its
// own (host_device, compute_device). A device that comes from the kind's
// defaults is in no option; then the error goes to the stage's `device`.
func deviceKey(options map[string]any, dev string) string {
	if v, ok := options["device"].(string); ok && v == dev {
		return "device"
	}
	for _, k := range sortedKeys(options) {
		if v, ok := options[k].(string); ok && v == dev {
			return k
		}
	}
	return "device"
}

// nodesAndSubjects checks each stage's ends and then each subject's: one
// producer, one consumer, and feedback only on a stage's own outputs.
func (b *builder) nodesAndSubjects() {
	sources := 0
	for _, name := range b.names {
		st := b.cfg.Stages[name]
		known := b.kinds.Known(st.Kind)
		source := known && b.kinds.IsSource(st.Kind)
		if source {
			sources++
		}
		switch {
		case source && st.In != "":
			b.fail(stagePath(name, "in"), fmt.Errorf("stage kind %q is a source and reads no subject; remove in: %s", st.Kind, st.In))
		case known && !source && st.In == "":
			b.fail(stagePath(name, "in"), fmt.Errorf("stage kind %q needs an in subject to read batches from", st.Kind))
		}
		if st.In != "" {
			b.consumers[st.In] = append(b.consumers[st.In], endpoint{name, stagePath(name, "in")})
		}
		seen := map[string]bool{}
		for i, out := range st.Out {
			if seen[out] {
				continue // config.Validate reports it; one stage is one producer
			}
			seen[out] = true
			b.producers[out] = append(b.producers[out], endpoint{name, stagePath(name, "out", strconv.Itoa(i))})
		}
		for i, fb := range st.Feedback {
			if !seen[fb] {
				b.fail(stagePath(name, "feedback", strconv.Itoa(i)),
					fmt.Errorf("feedback subject %q is not one of this stage's out [%s]", fb, strings.Join(st.Out, ", ")))
				continue
			}
			b.feedback[fb] = true
		}
	}

	b.checkEnds(b.producers, b.consumers,
		func(subject, first string) error {
			return fmt.Errorf("subject %q is also produced by stage %q; a subject has exactly one producer", subject, first)
		},
		func(subject string) error {
			return fmt.Errorf("dangling output: no stage reads subject %q (make it some stage's in, or remove it from out)", subject)
		})
	b.checkEnds(b.consumers, b.producers,
		func(subject, first string) error {
			return fmt.Errorf("subject %q is also consumed by stage %q; each subject has exactly one consumer in flowrun's credit protocol (publish a second subject instead)", subject, first)
		},
		func(subject string) error {
			return fmt.Errorf("dangling input: no stage publishes subject %q (add it to some stage's out)", subject)
		})

	if sources == 0 && len(b.names) > 0 {
		var kinds []string
		for _, k := range sorted(b.kinds.Names()) {
			if b.kinds.IsSource(k) {
				kinds = append(kinds, k)
			}
		}
		b.fail("stages", fmt.Errorf("no source stage: batches must start somewhere (source kinds: %s)", strings.Join(kinds, ", ")))
	}
}

// checkEnds checks one end of every subject (ends: its producers, or its
// consumers) against the other end (others): each endpoint after the
// first is refused with twice, and with no endpoint at the other end
// each is refused with dangling.
func (b *builder) checkEnds(ends, others map[string][]endpoint, twice func(subject, first string) error, dangling func(subject string) error) {
	for _, subject := range sortedKeys(ends) {
		eps := ends[subject]
		for _, e := range eps[1:] {
			b.fail(e.path, twice(subject, eps[0].stage))
		}
		if len(others[subject]) == 0 {
			for _, e := range eps {
				b.fail(e.path, dangling(subject))
			}
		}
	}
}

// sort orders the stages topologically over the subjects that are not
// feedback, and reports every cycle left: a cycle without a declared
// feedback edge would deadlock, each stage waiting for the next batch of
// the one before it.
func (b *builder) sort() []string {
	succ := map[string][]string{}
	indeg := map[string]int{}
	for _, subject := range sortedKeys(b.producers) {
		if b.feedback[subject] {
			continue
		}
		for _, p := range b.producers[subject] {
			for _, c := range b.consumers[subject] {
				succ[p.stage] = append(succ[p.stage], c.stage)
				indeg[c.stage]++
			}
		}
	}
	for _, s := range succ {
		sort.Strings(s)
	}

	for _, cycle := range cycles(b.names, succ) {
		b.fail(stagePath(cycle[0], "in"), fmt.Errorf("cycle %s (declare one edge under feedback)", strings.Join(cycle, " → ")))
	}

	// Kahn's algorithm with a heap so that ties go by name, and sources
	// first: every source is ready at the start and sorts before any
	// stage fed only through feedback.
	ready := &readyHeap{source: func(name string) bool {
		return b.kinds.Known(b.cfg.Stages[name].Kind) && b.kinds.IsSource(b.cfg.Stages[name].Kind)
	}}
	for _, name := range b.names {
		if indeg[name] == 0 {
			heap.Push(ready, name)
		}
	}
	var order []string
	for ready.Len() > 0 {
		name := heap.Pop(ready).(string)
		order = append(order, name)
		for _, next := range succ[name] {
			indeg[next]--
			if indeg[next] == 0 {
				heap.Push(ready, next)
			}
		}
	}
	return order
}

// cycles finds the strongly connected components of the stage graph
// (Tarjan) and returns one cycle through each component that has one,
// starting and ending at its first stage by name, e.g. [plan train plan].
func cycles(names []string, succ map[string][]string) [][]string {
	index := map[string]int{}
	low := map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var out [][]string
	next := 0

	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range succ[v] {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] != index[v] {
			return
		}
		var comp []string
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[w] = false
			comp = append(comp, w)
			if w == v {
				break
			}
		}
		if c := cycleIn(comp, succ); c != nil {
			out = append(out, c)
		}
	}
	for _, n := range names {
		if _, seen := index[n]; !seen {
			visit(n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// cycleIn returns the shortest cycle through the component's first stage
// by name, or nil if the component is one stage without a self-loop.
func cycleIn(comp []string, succ map[string][]string) []string {
	in := map[string]bool{}
	for _, c := range comp {
		in[c] = true
	}
	sort.Strings(comp)
	start := comp[0]
	// Breadth-first from start back to start, within the component.
	prev := map[string]string{}
	queue := []string{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range succ[v] {
			if !in[w] {
				continue
			}
			if w == start {
				path := []string{start}
				for u := v; u != start; u = prev[u] {
					path = append(path, u)
				}
				path = append(path, start)
				// path is start, back to front, start: reverse the middle.
				for i, j := 1, len(path)-2; i < j; i, j = i+1, j-1 {
					path[i], path[j] = path[j], path[i]
				}
				return path
			}
			if _, seen := prev[w]; !seen && w != start {
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return nil
}

// readyHeap orders ready stages: sources first, then by name.
type readyHeap struct {
	names  []string
	source func(string) bool
}

func (h *readyHeap) Len() int { return len(h.names) }
func (h *readyHeap) Less(i, j int) bool {
	si, sj := h.source(h.names[i]), h.source(h.names[j])
	if si != sj {
		return si
	}
	return h.names[i] < h.names[j]
}
func (h *readyHeap) Swap(i, j int) { h.names[i], h.names[j] = h.names[j], h.names[i] }
func (h *readyHeap) Push(x any)    { h.names = append(h.names, x.(string)) }
func (h *readyHeap) Pop() any {
	n := h.names[len(h.names)-1]
	h.names = h.names[:len(h.names)-1]
	return n
}

func (b *builder) result(order []string) *Graph {
	g := &Graph{Config: b.cfg, Subjects: map[string]Subject{}}
	for _, name := range order {
		st := b.cfg.Stages[name]
		g.Nodes = append(g.Nodes, Node{
			Name:     name,
			Kind:     st.Kind,
			In:       st.In,
			Out:      append([]string(nil), st.Out...),
			Feedback: append([]string(nil), st.Feedback...),
			Options:  b.options[name],
			Produces: b.fields[name].produces,
			Consumes: b.fields[name].consumes,
		})
	}
	// Without errors every subject has exactly one producer and consumer.
	for subject, prods := range b.producers {
		g.Subjects[subject] = Subject{
			Name:     subject,
			Producer: prods[0].stage,
			Consumer: b.consumers[subject][0].stage,
			Feedback: b.feedback[subject],
		}
	}
	return g
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}
