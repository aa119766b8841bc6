package engine

import (
	"time"

	"github.com/flowrun/flowrun/framework/clock"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/results"
)

// assemble is the results phase: what the run measured (summarize), its
// modeled schedule (modeledClock), the cost of each primitive on it, and
// where the memory went. digest is finish's.
func (r *run) assemble(digest string) (*results.Results, error) {
	cfg := r.opts.Graph.Config
	res := r.summarize(cfg, digest, r.uses)
	if err := r.modeledClock(res, cfg, r.opts.Modeled); err != nil {
		return nil, err
	}
	if err := r.servingResults(res, cfg); err != nil {
		return nil, err
	}
	var makespan int64
	if res.ModeledClock != nil {
		makespan = res.ModeledClock.MakespanNs
	}
	res.Primitives = r.primitives(makespan)
	res.HostRSSPeakBytes, res.Memory = memory(r.tables, r.storage, storageDevice(r.opts.Graph), r.pool)
	res.MemoryCompression = compression(r.tables, cfg.Embedding, r.cacheMemory)
	res.Placement = r.placementResults() // placed.go
	return res, nil
}

// summarize is the run's results but for the modeled figures: the config
// echo, per-stage counts and percentiles (wall, and modeled where a stage
// charged a device), throughput, training metrics and cache statistics.
func (r *run) summarize(cfg *config.Config, digest string, uses []results.PluginUse) *results.Results {
	wall := time.Since(r.started)
	res := &results.Results{
		Graph: cfg.Name, RunID: r.id, Seed: cfg.Seed, Batches: cfg.Dataset.Batches, Config: cfg.Echo,
		EvalBatches: r.total - cfg.Dataset.Batches, Digest: digest, Plugins: uses,
		WallMs: float64(wall.Nanoseconds()) / 1e6, Started: r.started,
	}
	for _, n := range r.nodes {
		s := results.Stage{Name: n.Name, Kind: n.Kind, Batches: len(n.wallNs), WallMs: results.PercentilesOf(n.wallNs)}
		if len(n.modNs) > 0 {
			p := results.PercentilesOf(n.modNs)
			s.ModeledMs = &p
		}
		res.Stages = append(res.Stages, s)
	}
	samples := float64(cfg.Dataset.BatchSize)
	if cfg.Dataset.Batches > 0 {
		res.IterationMs.Wall = res.WallMs / float64(max(r.total, 1))
		r.mu.Lock()
		res.IterationMs.SteadyWall = steadyWallMs(r.firstDone, r.lastDone, r.completed)
		r.mu.Unlock()
		res.Throughput.WallSamplesPerS = samples * float64(max(r.total, 1)) / wall.Seconds()
	}
	series, totals, values := r.metrics.Snapshot()
	if pts := series["loss"]; len(pts) > 0 {
		rp := make([]results.Point, len(pts))
		for i, p := range pts {
			rp[i] = results.Point{Batch: p.Seq, Value: p.Value}
		}
		res.Metrics.Loss = results.NewLossCurve(rp, max(1, len(rp)/20))
	}
	named := map[string]**float64{"auc": &res.Metrics.AUC, "logloss": &res.Metrics.LogLoss, "ne": &res.Metrics.NE, "ndcg": &res.Metrics.NDCG}
	named["accuracy"] = &res.Metrics.Accuracy
	for name, v := range values {
		switch dst, ok := named[name]; {
		case ok:
			*dst = &v
		case name == "eval_samples":
			res.Metrics.EvalCount = int(v)
		default:
			// Figures a stage reports beyond the named ones (NDCG's k, the
			// queries it averaged over) are kept, not dropped.
			if res.Metrics.Extra == nil {
				res.Metrics.Extra = make(map[string]float64)
			}
			res.Metrics.Extra[name] = v
		}
	}
	hits, misses := int64(totals["cache.hits"]), int64(totals["cache.misses"])
	if hits+misses > 0 {
		res.Cache = &results.Cache{
			Plugin: cfg.Cache.Plugin, Rows: cfg.CacheCapacity(),
			Hits: hits, Misses: misses, Evictions: int64(totals["cache.evictions"]),
			HitRate: float64(hits) / float64(hits+misses), ProfileRows: r.profileRows,
			LinkBytes: map[string]int64{
				"to_device": int64(totals["link.bytes_to_device"]),
				"to_host":   int64(totals["link.bytes_to_host"]),
			},
		}
	}
	if c := res.Cache; c != nil {
		c.DistinctHits, c.DistinctMisses = int64(totals["cache.distinct_hits"]), int64(totals["cache.distinct_misses"])
		if n := c.DistinctHits + c.DistinctMisses; n > 0 {
			c.DistinctHitRate = float64(c.DistinctHits) / float64(n)
		}
		c.HotLookups = int64(totals["cache.hot_lookups"])
		if n := c.Hits + c.Misses; n > 0 && c.HotLookups > 0 {
			c.HotShare = float64(c.HotLookups) / float64(n)
		}
	}
	res.Shadows = r.metrics.Shadows()
	return res
}

// modeledClock schedules the run's real dependency graph on the modeled
// per-stage, per-batch times (DESIGN.md "Two clocks") and puts the modeled
// iteration time and throughput in res. Nothing is modeled when no stage
// charged a device.
func (r *run) modeledClock(res *results.Results, cfg *config.Config, hand func(*clock.Timeline, int)) error {
	charged := false
	for _, n := range r.nodes {
		charged = charged || len(n.modNs) > 0
	}
	if !charged || r.total == 0 {
		return nil
	}
	tl, lookahead, err := r.scheduleModeled(cfg)
	if err != nil {
		return err
	}
	if hand != nil {
		hand(tl, lookahead)
	}
	sum := tl.Summary()
	res.ModeledClock = &sum
	// With one batch SteadyIteration is the makespan.
	iter := tl.SteadyIteration()
	res.IterationMs.Modeled = iter / 1e6
	if iter > 0 {
		res.Throughput.ModeledSamplesPerS = float64(cfg.Dataset.BatchSize) / (iter / 1e9)
	}
	return nil
}

// steadyWallMs is the wall time between batches leaving the graph, from
// the first to the last of n (0 below two batches): the iteration
// without the run's start-up (plugins launched, tables made, profiles
// taken) or its end (shadows draining, the digest).
func steadyWallMs(first, last time.Time, n int) float64 {
	if n < 2 {
		return 0
	}
	return float64(last.Sub(first).Nanoseconds()) / 1e6 / float64(n-1)
}
