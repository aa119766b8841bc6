// Command failcache is a cache plugin for flowrun's tests: the LRU policy,
// except that Plan refuses one batch (option fail_at, default 3), so a test
// can watch a stage fail mid-run in a real plugin process.
package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/flowrun/flowrun/plugins/caches/lru"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
)

type failing struct {
	cache.Cache
	failAt uint64
}

func (f *failing) Info(ctx context.Context) (plugin.Info, error) {
	info, err := f.Cache.Info(ctx)
	info.Name = "failcache"
	return info, err
}

// Configure takes fail_at and hands every other option to the LRU policy.
func (f *failing) Configure(ctx context.Context, setup plugin.Setup) error {
	opts := map[string]any{}
	if len(setup.Options) > 0 {
		if err := json.Unmarshal(setup.Options, &opts); err != nil {
			return fmt.Errorf("%w: %v", plugin.ErrInvalidConfig, err)
		}
	}
	f.failAt = 3
	if v, ok := opts["fail_at"].(float64); ok {
		f.failAt = uint64(v)
	}
	delete(opts, "fail_at")
	raw, err := json.Marshal(opts)
	if err != nil {
		return err
	}
	setup.Options = raw
	return f.Cache.Configure(ctx, setup)
}

func (f *failing) Plan(ctx context.Context, req *cache.PlanRequest) (*cache.PlanResult, error) {
	if req.Seq == f.failAt {
		return nil, fmt.Errorf("failcache: refusing batch %d", req.Seq)
	}
	return f.Cache.Plan(ctx, req)
}

func main() { cache.Serve(&failing{Cache: lru.New()}) }
