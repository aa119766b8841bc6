// Package cachetest is the conformance suite for cache policies. A policy's
// tests call Run with a constructor, which checks the contract of
// sdk/cache over real gRPC in process, and RunBinary with the path of the
// built plugin binary, which checks the same contract against the binary
// launched as a go-plugin subprocess:
//
//	func TestConformance(t *testing.T) {
//		cachetest.Run(t, func() cache.Cache { return lru.New() })
//	}
//
// The suite configures a few tables with a capacity and the host's windows
// (merged into the policy's own options, see WithOptions), plans batches
// whose IDs live in shared-memory regions, each with the IDs of the next
// batches in PlanRequest.Future (fewer at the end, none in some requests),
// and checks every answer: slots in [-1, capacity), hits 0 or 1, per-table
// counts, one slot per row and one row per slot in a batch, victims that
// were really resident, no resident row dropped or moved without being
// reported as a victim, the sentinel errors, and the policy's declared
// cache.Needs (no change of state, bad options as plugin.FieldError). With
// WithWindows it also
// checks that the policy is safe in a pipelined graph: no batch evicts a
// slot one of the previous batches of the past window uses, nor a row one
// of its future batches looks up.
//
// Mock is a Cache with function fields for tests of code that uses caches;
// Arena lays plan requests out in shared memory, as a host does, for a
// policy's own tests.
package cachetest

import (
	"encoding/json"
	"testing"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/internal/plugintest"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// DefaultCapacity is the capacity (rows per table) the suite configures
// unless WithCapacity says otherwise.
const DefaultCapacity = 64

// DefaultFuture is the number of future batches the suite sends with each
// request (and as the host's "future" option) unless WithWindows says
// otherwise.
const DefaultFuture = 2

// Option adjusts a conformance run.
type Option func(*config)

type config struct {
	capacity int64
	options  json.RawMessage
	// past and future are the host's windows; holds says whether to check
	// that the policy honours them.
	past, future int
	holds        bool
	// declares says the policy implements cache.Declarer (known only in
	// process: over gRPC every policy answers Needs).
	declares bool
}

// WithCapacity sets the capacity the suite configures, for policies that
// need it to be a multiple of something (a set-associative cache's ways).
// It must be at least 8.
func WithCapacity(rows int64) Option { return func(c *config) { c.capacity = rows } }

// WithOptions gives the policy's own options, as a JSON object; the suite
// adds "capacity" to it.
func WithOptions(raw json.RawMessage) Option { return func(c *config) { c.options = raw } }

// WithWindows makes the suite act as a pipelined host with the given past
// and future windows (cache.Options.Past and Future), and check that the
// policy holds them: no batch evicts a slot that one of the past batches
// before it uses, nor a row that one of the future batches sent with it
// looks up. Each batch then has at most capacity/(past+1+future) distinct
// rows per table, so that every window fits. For policies meant for
// pipelined graphs, such as ScratchPipe's.
func WithWindows(past, future int) Option {
	return func(c *config) { c.past, c.future, c.holds = past, future, true }
}

// suite is the cache kind's conformance suite (sdk/internal/plugintest).
var suite = plugintest.Suite[cache.Cache, config, Option]{
	Kind: plugin.KindCache, Server: cache.ServerPlugin, Host: cache.HostPlugin,
	Defaults: config{capacity: DefaultCapacity, future: DefaultFuture},
	Setup:    config.setup, Contract: config.runContract,
}

// Run checks the cache contract against policies made by newImpl, each
// served over real gRPC in this process. Every subtest gets a fresh policy.
func Run(t *testing.T, newImpl func() cache.Cache, opts ...Option) {
	t.Helper()
	// Over gRPC every policy answers Needs: whether it declares is known
	// only here, from the implementation itself.
	_, declares := newImpl().(cache.Declarer)
	suite.Run(t, newImpl, append(opts[:len(opts):len(opts)], func(c *config) { c.declares = declares }))
}

// RunBinary checks that the plugin binary at path answers "describe" as a
// cache and honours the cache contract, launching it as a go-plugin
// subprocess for every subtest. It skips only when path is empty; a missing
// binary fails.
func RunBinary(t *testing.T, path string, opts ...Option) {
	t.Helper()
	suite.RunBinary(t, path, opts)
}

// setupOptions merges what a host fills (capacity and its windows, as
// cache.Options) into the policy's own options.
func (c config) setupOptions(t testing.TB, extra map[string]any) json.RawMessage {
	t.Helper()
	host := map[string]any{"capacity": c.capacity}
	if c.past != 0 {
		host["past"] = c.past
	}
	if c.future != 0 {
		host["future"] = c.future
	}
	return plugintest.MergeOptions(t, "cachetest", c.options, host, extra)
}

// tables are the shapes the suite configures: a skewed mid-size table, a
// table smaller than the capacity, and a large one where nearly every ID
// is new.
var tables = []plugin.Table{
	{Rows: 1000, Dim: 16},
	{Rows: 40, Dim: 16},
	{Rows: 100000, Dim: 16},
}

func (c config) setup(t testing.TB) plugin.Setup {
	return plugin.Setup{
		RunID:     "cachetest",
		Seed:      7,
		Tables:    tables,
		BatchSize: 64,
		Lookups:   4,
		Options:   c.setupOptions(t, nil),
	}
}
