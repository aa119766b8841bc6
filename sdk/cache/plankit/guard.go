package plankit

import (
	"fmt"
	"sync"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// Guard serialises a policy's Configure and Plan and owns the mapper every
// Plan maps its regions through. A policy gets either a fully checked
// cache.Batch or an error wrapping plugin.ErrInvalidRequest, before it has
// changed any of its own state: a bad request must not leave a policy
// half-updated. The zero Guard is not configured.
type Guard struct {
	mu     sync.Mutex
	mapper region.Mapper
	tables []plugin.Table // nil until Configure
	seen   RowIndex       // countDistinct's scratch, reused
}

// Configure records the run's tables and, under the lock, lets the policy
// install the state it built from them.
func (g *Guard) Configure(tables []plugin.Table, install func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tables = append([]plugin.Table{}, tables...)
	install()
}

// Plan checks and maps req under the lock (cache.PlanRequest.View) and
// hands the batch to plan. Errors from the request are prefixed by the
// policy's name.
func (g *Guard) Plan(name string, req *cache.PlanRequest, plan func(*cache.Batch) (*cache.PlanResult, error)) (*cache.PlanResult, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tables == nil {
		return nil, plugin.ErrNotConfigured
	}
	b, err := req.View(&g.mapper, g.tables)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	res, err := plan(b)
	if err == nil {
		g.countDistinct(b, res)
	}
	return res, err
}

// countDistinct fills, for every table whose plan left both distinct
// counts 0, cache.TableStats' DistinctHits and DistinctMisses from the
// hit bytes: each distinct row of the batch once, a hit when its first
// lookup hit (a policy gives every lookup of a row one answer).
func (g *Guard) countDistinct(b *cache.Batch, res *cache.PlanResult) {
	if res == nil || len(res.Tables) != len(b.Offsets)-1 {
		return // the host refuses such a result; nothing to count
	}
	if g.seen.keys == nil {
		g.seen = NewRowIndex(0)
	}
	for t := range res.Tables {
		st := &res.Tables[t]
		if st.DistinctHits != 0 || st.DistinctMisses != 0 {
			continue
		}
		lo, hi := b.Table(t)
		g.seen.Clear()
		for i := lo; i < hi; i++ {
			if _, ok := g.seen.Get(b.IDs[i]); ok {
				continue
			}
			g.seen.Put(b.IDs[i], 0)
			if b.Hits[i] == 1 {
				st.DistinctHits++
			} else {
				st.DistinctMisses++
			}
		}
	}
}

// Future maps and checks req's future windows
// (cache.PlanRequest.FutureIDs); call it only from inside Plan's plan.
func (g *Guard) Future(req *cache.PlanRequest) ([][]int64, error) {
	return req.FutureIDs(&g.mapper, g.tables)
}
