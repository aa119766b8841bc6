package engine

import (
	"context"
	"fmt"
	"maps"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/sdk/cache"
)

// cacheSetupOptions are the options the cache is asked its Needs with
// and then configured with (sdk/cache.Options): the graph's cache.options,
// the host's over them — the pipeline's windows, from the plan stage:
// past only in a pipelined graph with Storage, where batches before b may
// still be writing what b's collect reads; future whenever plan sends
// future batches — and capacity from cache.size. The warm-up profile the
// policy may ask for comes later (withProfile).
func cacheSetupOptions(g *graph.Graph) map[string]any {
	return cacheSetupOptionsFor(g, g.Config.Cache)
}

// cacheSetupOptionsFor is cacheSetupOptions for policy c in g's run (a
// shadow's): c's options and capacity, the run's windows.
func cacheSetupOptionsFor(g *graph.Graph, c config.Cache) map[string]any {
	cfg := g.Config
	opts := make(map[string]any, len(c.Options)+3)
	maps.Copy(opts, c.Options)
	past, future := g.Windows()
	if cfg.Pipeline == config.Pipelined && g.UsesStorage() && past > 0 {
		opts["past"] = past
	}
	if future > 0 {
		opts["future"] = future
	}
	opts["capacity"] = min(c.CacheRows(cfg.Dataset.MaxRows()), cfg.Dataset.MaxRows())
	return opts
}

// openCache opens policy c beside the run's cache (stage.CacheOpener):
// configured with the host options the run's cache gets, checked as the
// graph's cache would be were it c, with the warm-up profile it asks for.
func (r *run) openCache(ctx context.Context, c config.Cache) (cache.Cache, int, error) {
	g := r.opts.Graph
	cc, err := r.opts.Plugins.Cache(ctx, c.Plugin)
	if err != nil {
		return nil, 0, err
	}
	opts := cacheSetupOptionsFor(g, c)
	needs, err := cacheNeeds(ctx, cc, r.shape, r.id, opts)
	if err != nil {
		return nil, 0, fmt.Errorf("cache plugin %q: %w", c.Plugin, err)
	}
	as := *g.Config
	as.Cache = c
	ag := *g
	ag.Config = &as
	if err := graph.CheckCache(&ag, needs); err != nil {
		return nil, 0, fmt.Errorf("cache plugin %q: %w", c.Plugin, err)
	}
	var rows []int64
	release, err := withProfile(needs, g.Config, opts, &rows)
	if err != nil {
		return nil, 0, err
	}
	defer release()
	setup, err := r.shape.Setup(r.id, opts)
	if err != nil {
		return nil, 0, fmt.Errorf("cache plugin %q: %w", c.Plugin, err)
	}
	if err := cc.Configure(ctx, setup); err != nil {
		return nil, 0, fmt.Errorf("cache plugin %q: configure: %w", c.Plugin, err)
	}
	future, _ := opts["future"].(int)
	return cc, future, nil
}

// askNeeds asks the cache what it needs under opts, the options a run
// gives it before the profile (cacheSetupOptions), and checks g against
// the answer (graph.CheckCache).
func askNeeds(ctx context.Context, c cache.Cache, g *graph.Graph, shape *Shape, runID string, opts map[string]any) (cache.Needs, error) {
	needs, err := cacheNeeds(ctx, c, shape, runID, opts)
	if err != nil {
		return cache.Needs{}, fmt.Errorf("cache plugin %q: %w", g.Config.Cache.Plugin, err)
	}
	return needs, graph.CheckCache(g, needs)
}

// cacheNeeds is what the cache declares it needs under opts. The policy
// decodes and checks its options to answer; a bad one comes back as its
// *plugin.FieldError.
func cacheNeeds(ctx context.Context, c cache.Cache, shape *Shape, runID string, opts map[string]any) (cache.Needs, error) {
	setup, err := shape.Setup(runID, opts)
	if err != nil {
		return cache.Needs{}, err
	}
	return cache.NeedsOf(ctx, c, setup)
}

// withProfile adds to opts the warm-up profile the policy asked for
// (Needs.ProfileBatches, at most the run's training batches) under
// "frequencies", sets rows to the distinct rows it has per table, and
// returns what releases it once the cache is configured.
func withProfile(needs cache.Needs, cfg *config.Config, opts map[string]any, rows *[]int64) (func(), error) {
	if needs.ProfileBatches <= 0 {
		return func() {}, nil
	}
	n := min(needs.ProfileBatches, cfg.Dataset.Batches)
	freq, err := profileFrequencies(cfg.Seed, cfg.Dataset, n, rows)
	if err != nil {
		return nil, fmt.Errorf("cache frequencies (a warm-up pass over the first %d batches): %w", n, err)
	}
	opts["frequencies"] = freq.Ref()
	return func() { freq.Close() }, nil
}
