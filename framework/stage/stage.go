// Package stage defines what a stage kind is: a sealed Factory that makes a
// typed, validated Config and builds the stage from it, the Settings a stage
// is handed (telemetry, plugins, the run's shape), and the Stage interfaces
// the runtime drives.
//
// A stage does one batch at a time through plugins and returns; moving
// batches between stages (NATS subjects, credits, trace context) is the
// runtime's job, not the stage's. Stage kinds import this package and the
// SDK, never each other, the graph or the runtime.
package stage

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/hazard"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/model"
)

// Kind names a stage kind (load, plan, ...).
type Kind string

// Config is a stage kind's own options. Validate reports every problem,
// each under its key path (config.At).
type Config interface {
	Validate() error
}

// Plugins are the plugin instances of a run, already configured. A stage
// uses the ones its kind needs.
type Plugins struct {
	Cache   cache.Cache
	Kernel  kernel.Kernel
	Model   model.Model
	Devices map[string]device.Device
}

// Settings is everything a stage is handed when it is created.
type Settings struct {
	// Name is the stage's name in the graph; ID is "kind/name".
	Name string
	// Graph is the whole decoded graph (dataset shape, seed, cache size).
	Graph *config.Config
	// Tables are the host embedding tables, shared by every stage.
	Tables *batch.Tables
	// Layout is where each array of a batch lives inside a batch buffer.
	Layout *batch.Layout
	// Storage is the device-side cache rows (ScratchPipe's Storage array),
	// filled by insert and read by train with source: storage; nil unless
	// a stage of the graph uses it.
	Storage *batch.Storage
	Plugins
	// TracerProvider makes the stage's own spans, if it wants any beyond
	// the span the runtime opens around each batch.
	TracerProvider trace.TracerProvider
	Logger         *slog.Logger
	// Metrics receives the stage's figures (training loss, scores, ...).
	Metrics *Metrics
	// Hazards is the run's hazard checker (flowrun run --check-hazards),
	// nil when the run checks nothing. Plan declares each batch's writes
	// to it; collect and train check their reads of Storage slots and
	// host rows against it; the runtime retires the writes after each
	// stage's Process and when a batch leaves the graph.
	Hazards *hazard.Checker
	// OpenCache opens another cache policy beside the run's (a shadow
	// stage's what-if policies), nil where the runtime offers none.
	OpenCache CacheOpener
}

// CacheUser is implemented by a decoded Config whose stage opens cache
// policies beside the run's (stage.Settings.OpenCache): flowrun validate
// checks each as it checks the graph's cache, at its key under the stage.
type CacheUser interface {
	// CachePolicies lists the policies, each at its key path relative to
	// the stage (policies::0, ...).
	CachePolicies() (keys []string, policies []config.Cache)
}

// CacheOpener opens and configures cache policy c (its plugin, size and
// options) as the runtime configures the run's own: the same host options
// (the pipeline's windows), the graph's checks against its Needs, and the
// warm-up profile it asks for. future is the window it was configured
// with (cache.Options.Future), which its caller must send with every
// request as the plan stage does. The plugin host closes it with the run.
type CacheOpener func(ctx context.Context, c config.Cache) (policy cache.Cache, future int, err error)

// ID is the stage's component id, "kind/name".
func (s Settings) ID(k Kind) string { return fmt.Sprintf("%s/%s", k, s.Name) }

// Device is the graph's device a stage option (key) names: nil for an empty
// name (the stage charges nothing there), an error for a name the graph's
// devices lack.
func (s Settings) Device(key, name string) (device.Device, error) {
	if name == "" {
		return nil, nil
	}
	d, ok := s.Devices[name]
	if !ok {
		return nil, fmt.Errorf("%s %q is not a device of the graph", key, name)
	}
	return d, nil
}

// Stage processes one batch. The runtime calls Process for one batch at a
// time, in sequence order, and publishes the batch onward when it returns
// nil. Attributes the stage sets on b (b.SetStat) go onto the batch's span.
type Stage interface {
	Process(ctx context.Context, b *batch.Batch) error
}

// Source is a stage with no input: it fills batches. The runtime hands it
// one empty batch at a time (sequence number and buffer, in order) once the
// graph has room for it, for sequence numbers 0 to Batches()-1.
type Source interface {
	// Batches is how many batches the source makes in all; the runtime uses
	// it to know when the run is complete and to show progress.
	Batches() uint64
	// Next fills batch b.Seq.
	Next(ctx context.Context, b *batch.Batch) error
}

// Lookahead is implemented by stages that must see the next batches before
// processing one — ScratchPipe's plan examines the IDs of its future window.
// The runtime holds batch b until batches b+1 … b+Lookahead() have arrived
// (fewer at the end of the run), then calls ProcessAhead with them, in
// sequence order. The held batches count against the batch pool, which the
// runtime enlarges by Lookahead().
type Lookahead interface {
	Lookahead() int
	ProcessAhead(ctx context.Context, b *batch.Batch, next []*batch.Batch) error
}

// Closer is implemented by stages that hold resources past the last batch.
type Closer interface {
	Close(ctx context.Context) error
}

// Finisher is implemented by stages with work to do once every training
// batch has passed them (held-out evaluation, final statistics).
type Finisher interface {
	Finish(ctx context.Context) error
}

// CreateFunc builds a stage from its settings and decoded config.
type CreateFunc func(ctx context.Context, set Settings, cfg Config) (any, error)

// Factory makes one stage kind. It is sealed: build one with NewFactory.
type Factory interface {
	Kind() Kind
	// Source reports whether the kind makes batches (and has no input).
	Source() bool
	// CreateDefaultConfig returns a new Config holding the defaults.
	CreateDefaultConfig() Config
	// Create builds a Stage (or a Source, when Source() is true).
	Create(ctx context.Context, set Settings, cfg Config) (any, error)
	// Fields is what a stage of the kind with config cfg produces and
	// consumes (WithFields, then cfg's FieldDeclarer).
	Fields(cfg Config) Fields
	// HazardRole is the kind's role in the hazard model, "" for none.
	HazardRole() hazard.Role
	unexported()
}

type factory struct {
	kind     Kind
	source   bool
	defaults func() Config
	create   CreateFunc
	fields   Fields
	role     hazard.Role
	needs    Need
}

// FactoryOption adjusts a factory.
type FactoryOption func(*factory)

// AsSource marks a kind as a batch source.
func AsSource() FactoryOption { return func(f *factory) { f.source = true } }

// WithFields declares the batch fields (arrays and stats) every stage of
// the kind produces and consumes, whatever its options; a Config that is a
// FieldDeclarer adds those that depend on them. The graph refuses a stage
// that consumes a field no stage upstream produces, and the batch layout
// holds the arrays the graph's stages declare, no others.
func WithFields(produces, consumes []batch.Field) FactoryOption {
	return func(f *factory) {
		f.fields.Produces = append(f.fields.Produces, produces...)
		f.fields.Consumes = append(f.fields.Consumes, consumes...)
	}
}

// WithHazardRole declares the part the kind plays in ScratchPipe's hazard
// model (hazard.Collect, hazard.Insert, hazard.Train): the role its reads
// are checked as and the writes the plan declares for it are made at.
func WithHazardRole(r hazard.Role) FactoryOption { return func(f *factory) { f.role = r } }

// Need is what a stage kind needs in its Settings to be created.
type Need uint16

// The needs, in the order Create names them when missing.
const (
	NeedCache Need = 1 << iota
	NeedKernel
	NeedModel
	NeedTables
	NeedStorage
	NeedLayout
	NeedMetrics
)

var needs = []struct {
	need Need
	what string
	has  func(Settings) bool
}{
	{NeedCache, "a cache plugin", func(s Settings) bool { return s.Cache != nil }},
	{NeedKernel, "a kernel plugin", func(s Settings) bool { return s.Kernel != nil }},
	{NeedModel, "a model plugin", func(s Settings) bool { return s.Model != nil }},
	{NeedTables, "the host tables", func(s Settings) bool { return s.Tables != nil }},
	{NeedStorage, "the Storage", func(s Settings) bool { return s.Storage != nil }},
	{NeedLayout, "the batch layout", func(s Settings) bool { return s.Layout != nil }},
	{NeedMetrics, "the run's metrics", func(s Settings) bool { return s.Metrics != nil }},
}

// Requires declares what the kind needs in its Settings (NeedTables |
// NeedLayout ...): Create refuses to build a stage without it, naming
// what is missing, before the kind's own constructor runs.
func Requires(n Need) FactoryOption { return func(f *factory) { f.needs |= n } }

// missing lists what set lacks of the needs n.
func missing(n Need, set Settings) []string {
	var out []string
	for _, x := range needs {
		if n&x.need != 0 && !x.has(set) {
			out = append(out, x.what)
		}
	}
	return out
}

// Fields are the batch fields a stage produces and consumes.
type Fields struct {
	Produces, Consumes []batch.Field
}

// FieldDeclarer is implemented by a decoded Config whose stage produces or
// consumes fields that depend on its options (train with source: storage
// reads the plan's slots). They add to the factory's WithFields.
type FieldDeclarer interface {
	BatchFields() Fields
}

// New is NewFactory for a kind whose Config is a *C: each stage gets its
// own copy of defaults, and create is handed the decoded config typed.
func New[C any, P interface {
	*C
	Config
}](kind Kind, defaults C, create func(context.Context, Settings, P) (any, error), opts ...FactoryOption) Factory {
	return NewFactory(kind,
		func() Config { c := defaults; return P(&c) },
		func(ctx context.Context, set Settings, cfg Config) (any, error) {
			c, ok := cfg.(P)
			if !ok {
				return nil, fmt.Errorf("config is %T, want %T", cfg, P(nil))
			}
			return create(ctx, set, c)
		}, opts...)
}

// NewFactory returns the factory for a stage kind.
func NewFactory(kind Kind, defaults func() Config, create CreateFunc, opts ...FactoryOption) Factory {
	f := &factory{kind: kind, defaults: defaults, create: create}
	for _, o := range opts {
		o(f)
	}
	return f
}

func (f *factory) Kind() Kind                  { return f.kind }
func (f *factory) HazardRole() hazard.Role     { return f.role }
func (f *factory) Source() bool                { return f.source }
func (f *factory) CreateDefaultConfig() Config { return f.defaults() }
func (f *factory) Create(ctx context.Context, set Settings, cfg Config) (any, error) {
	if m := missing(f.needs, set); len(m) > 0 {
		return nil, fmt.Errorf("create stage %s: %s needs %s", set.ID(f.kind), f.kind, joinAnd(m))
	}
	s, err := f.create(ctx, set, cfg)
	if err != nil {
		return nil, fmt.Errorf("create stage %s: %w", set.ID(f.kind), err)
	}
	switch s.(type) {
	case Source:
		if !f.source {
			return nil, fmt.Errorf("create stage %s: kind %s is not a source", set.ID(f.kind), f.kind)
		}
	case Stage, Lookahead:
	default:
		return nil, fmt.Errorf("create stage %s: %T is neither a Stage, a Lookahead nor a Source", set.ID(f.kind), s)
	}
	return s, nil
}
func (f *factory) unexported() {}

func (f *factory) Fields(cfg Config) Fields {
	out := Fields{
		Produces: append([]batch.Field(nil), f.fields.Produces...),
		Consumes: append([]batch.Field(nil), f.fields.Consumes...),
	}
	if d, ok := cfg.(FieldDeclarer); ok {
		more := d.BatchFields()
		out.Produces = append(out.Produces, more.Produces...)
		out.Consumes = append(out.Consumes, more.Consumes...)
	}
	return out
}

// joinAnd joins "a", "b", "c" as "a, b and c".
func joinAnd(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// Registry is the set of stage kinds a run may use, listed explicitly by the
// caller (cmd/flowrun/components.go), never filled by init().
type Registry map[Kind]Factory

// NewRegistry indexes factories by kind; a kind listed twice is an error.
func NewRegistry(factories ...Factory) (Registry, error) {
	r := make(Registry, len(factories))
	for _, f := range factories {
		if _, dup := r[f.Kind()]; dup {
			return nil, fmt.Errorf("stage kind %q listed twice", f.Kind())
		}
		r[f.Kind()] = f
	}
	return r, nil
}

// Names lists the registered kinds, sorted.
func (r Registry) Names() []string {
	names := make([]string, 0, len(r))
	for k := range r {
		names = append(names, string(k))
	}
	sort.Strings(names)
	return names
}

// Known reports whether kind is registered.
func (r Registry) Known(kind string) bool { _, ok := r[Kind(kind)]; return ok }

// IsSource reports whether kind is a registered source kind.
func (r Registry) IsSource(kind string) bool {
	f, ok := r[Kind(kind)]
	return ok && f.Source()
}

// Fields is what a stage of kind with decoded options (DecodeOptions'
// result) produces and consumes, for the graph's check and the batch
// layout. An unknown kind declares nothing.
func (r Registry) Fields(kind string, options any) (produces, consumes []batch.Field) {
	f, ok := r[Kind(kind)]
	if !ok {
		return nil, nil
	}
	cfg, _ := options.(Config)
	fs := f.Fields(cfg)
	return fs.Produces, fs.Consumes
}

// HazardRole is kind's role in the hazard model, "" for none or an
// unknown kind.
func (r Registry) HazardRole(kind string) hazard.Role {
	if f, ok := r[Kind(kind)]; ok {
		return f.HazardRole()
	}
	return ""
}

// HazardName is the name the hazard checker knows a stage of kind by: its
// role when it declares one, else its kind (which only places it in a
// strict checker's order). The runtime passes it to Checker.Wrote and
// lists it in hazard.Strict's Order.
func (r Registry) HazardName(kind string) string {
	if role := r.HazardRole(kind); role != "" {
		return string(role)
	}
	return kind
}

// DecodeOptions decodes a stage's options over its kind's defaults,
// rejecting unknown keys, and validates the result.
func (r Registry) DecodeOptions(kind string, options map[string]any) (any, error) {
	f, ok := r[Kind(kind)]
	if !ok {
		return nil, fmt.Errorf("unknown stage kind %q", kind)
	}
	cfg := f.CreateDefaultConfig()
	if err := decode(options, cfg); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}
