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
	cfg := g.Config
	opts := make(map[string]any, len(cfg.Cache.Options)+3)
	maps.Copy(opts, cfg.Cache.Options)
	past, future := g.Windows()
	if cfg.Pipeline == config.Pipelined && g.UsesStorage() && past > 0 {
		opts["past"] = past
	}
	if future > 0 {
		opts["future"] = future
	}
	opts["capacity"] = cfg.CacheCapacity()
	return opts
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
