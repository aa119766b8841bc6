// Package plan is the stage that asks the cache policy, once per batch and
// for all tables at once, which IDs hit, which slot each miss fills and
// which rows are evicted. It writes the decisions into the batch's slots,
// hits and victims arrays for the stages that move rows.
package plan

import (
	"context"
	"fmt"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/sdk/cache"
)

type planner struct {
	set stage.Settings
}

func (p *planner) Process(ctx context.Context, b *batch.Batch) error {
	req := &cache.PlanRequest{Seq: b.Seq, TableOffsets: p.set.Layout.IndexStart()}
	var err error
	if req.IDs, err = b.Ref(batch.IDs); err != nil {
		return err
	}
	if req.Slots, err = b.Ref(batch.Slots); err != nil {
		return err
	}
	if req.Hits, err = b.Ref(batch.Hits); err != nil {
		return err
	}
	if req.Victims, err = b.Ref(batch.Victims); err != nil {
		return err
	}
	res, err := p.set.Cache.Plan(ctx, req)
	if err != nil {
		return fmt.Errorf("cache plan: %w", err)
	}
	if len(res.Tables) != p.set.Layout.Tables {
		return fmt.Errorf("cache plan: policy answered for %d tables, the batch has %d", len(res.Tables), p.set.Layout.Tables)
	}
	var hits, misses, evictions int64
	for _, t := range res.Tables {
		hits += t.Hits
		misses += t.Misses
		evictions += t.Evictions
	}
	b.SetStat("hits", hits)
	b.SetStat("misses", misses)
	b.SetStat("evictions", evictions)
	b.SetStat("victims", res.Victims)
	if !b.Eval {
		p.set.Metrics.Add("cache.hits", float64(hits))
		p.set.Metrics.Add("cache.misses", float64(misses))
		p.set.Metrics.Add("cache.evictions", float64(evictions))
	}
	return nil
}
