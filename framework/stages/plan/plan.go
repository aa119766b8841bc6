// Package plan is ScratchPipe's [Plan] stage (Sec. IV-C, IV-D): it asks the
// cache policy, once per batch and for all tables at once, which IDs hit,
// which slot each miss fills and which rows are evicted, and writes the
// decisions into the batch's slots, hits and victims arrays for the stages
// that move rows (collect, exchange, insert) and train.
//
// Plan looks ahead: it holds batch b until the next future_window batches
// have arrived and sends their IDs with b's request, so that a policy with
// a Hold mask keeps the rows they are about to read from the host out of
// b's victims (RAW hazard 4). With a hazard checker, plan declares every
// write the batch will make further down the pipeline, against which
// collect and train check their reads.
package plan

import (
	"context"
	"fmt"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/hazard"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/device"
)

type planner struct {
	set stage.Settings
	cfg *Config
	dev device.Device
}

// Lookahead is the future window: the runtime hands plan batch b once
// b+1 … b+future_window have arrived (fewer at the end of the run).
func (p *planner) Lookahead() int { return p.cfg.FutureWindow }

// Process plans a batch without a future window.
func (p *planner) Process(ctx context.Context, b *batch.Batch) error {
	return p.ProcessAhead(ctx, b, nil)
}

// ProcessAhead plans b with the IDs of the batches that follow it.
func (p *planner) ProcessAhead(ctx context.Context, b *batch.Batch, next []*batch.Batch) error {
	req := &cache.PlanRequest{Seq: b.Seq, TableOffsets: p.set.Layout.IndexStart()}
	var err error
	if req.IDs, err = batch.IDs.Ref(b); err != nil {
		return err
	}
	if req.Slots, err = batch.Slots.Ref(b); err != nil {
		return err
	}
	if req.Hits, err = batch.Hits.Ref(b); err != nil {
		return err
	}
	if req.Victims, err = batch.Victims.Ref(b); err != nil {
		return err
	}
	for _, n := range next {
		if n.Seq <= b.Seq {
			return fmt.Errorf("future batch %d does not follow batch %d", n.Seq, b.Seq)
		}
		ids, err := batch.IDs.Ref(n)
		if err != nil {
			return fmt.Errorf("future batch %d: %w", n.Seq, err)
		}
		req.Future = append(req.Future, cache.Window{Seq: n.Seq, IDs: ids})
	}
	res, err := p.set.Cache.Plan(ctx, req)
	if err != nil {
		return fmt.Errorf("cache plan: %w", err)
	}
	if len(res.Tables) != p.set.Layout.Tables {
		return fmt.Errorf("cache plan: policy answered for %d tables, the batch has %d", len(res.Tables), p.set.Layout.Tables)
	}
	if p.set.Hazards != nil {
		if err := p.declare(b, res.Victims); err != nil {
			return err
		}
	}
	var hits, misses, evictions int64
	for _, t := range res.Tables {
		hits += t.Hits
		misses += t.Misses
		evictions += t.Evictions
	}
	Hits.Set(b, hits)
	batch.Misses.Set(b, misses)
	Evictions.Set(b, evictions)
	batch.VictimCount.Set(b, res.Victims)
	Future.Set(b, int64(len(next)))
	if err := p.charge(ctx, b, hits+misses, int64(len(next)), misses+evictions); err != nil {
		return err
	}
	if !b.Eval {
		p.set.Metrics.Add("cache.hits", float64(hits))
		p.set.Metrics.Add("cache.misses", float64(misses))
		p.set.Metrics.Add("cache.evictions", float64(evictions))
		var dHits, dMisses int64
		for _, t := range res.Tables {
			dHits, dMisses = dHits+t.DistinctHits, dMisses+t.DistinctMisses
		}
		p.set.Metrics.Add("cache.distinct_hits", float64(dHits))
		p.set.Metrics.Add("cache.distinct_misses", float64(dMisses))
		var hot int64
		for _, t := range res.Tables {
			hot += t.HotLookups
		}
		if hot > 0 {
			p.set.Metrics.Add("cache.hot_lookups", float64(hot))
		}
	}
	return nil
}

// Bytes the modeled plan charges per ID and per index entry: an ID is an
// int64; a query or an update of the index (a hash map of ID → slot)
// touches one 32-byte memory sector at a random place; a decision is a
// slot (int64) and a hit flag (one byte).
const (
	idBytes       = 8
	probeBytes    = 32
	decisionBytes = 8 + 1
)

// charge charges the modeled time of b's plan to the stage's device, the
// one that holds the policy's index (ScratchPipe's Hit-Map, on the GPU,
// Sec. IV-D: "the GPU scratchpad's Hit-Map is queried"): the batch's IDs
// copied to it, one index query per ID of b and of each of the future
// batches it holds, the decisions written, and one index update per
// missed lookup and per eviction. Misses are the policy's count of
// lookups (cache.TableStats): a row missed twice in a batch, or a lookup
// the policy bypasses, counts too, so the updates are an upper bound of
// the placed misses, which plan cannot tell apart without another pass
// over the batch. A policy's own bookkeeping beyond its
// index (ScratchPipe's Hold mask, a bit per slot and batch of the window)
// is not charged: the plan stage cannot see it, and it is a few MB a batch.
func (p *planner) charge(ctx context.Context, b *batch.Batch, ids, future, updates int64) error {
	if p.dev == nil {
		return nil
	}
	ns, err := stage.Charge(ctx, b, p.cfg.Device, p.dev,
		device.Op{Name: "ids-to-device", Kind: device.Transfer, Bytes: idBytes * ids},
		device.Op{Name: "index-query", Kind: device.Read, Bytes: probeBytes * ids * (1 + future)},
		device.Op{Name: "write-decisions", Kind: device.Write, Bytes: decisionBytes * ids},
		device.Op{Name: "index-update", Kind: device.Write, Bytes: probeBytes * updates})
	if err != nil {
		return err
	}
	batch.ModeledNs.Set(b, ns)
	return nil
}

// declare tells the hazard checker every write b will make further down
// the pipeline: insert's fills and victim write-backs, train's updates of
// the slots it trains in, and train's updates of the host rows a policy
// left without a slot (a bypass: static top-N's cold rows, trained in the
// host table as in ScratchPipe's Fig. 4b).
func (p *planner) declare(b *batch.Batch, nVictims int64) error {
	ids, err := batch.IDs.View(b)
	if err != nil {
		return err
	}
	slots, err := batch.Slots.View(b)
	if err != nil {
		return err
	}
	hits, err := batch.Hits.View(b)
	if err != nil {
		return err
	}
	victims, err := batch.Victims.View(b)
	if err != nil {
		return err
	}
	start := p.set.Layout.IndexStart()
	w, err := hazard.PlannedBatch{IndexStart: start, IDs: ids, Slots: slots, Hits: hits,
		Victims: victims, NVictims: nVictims, Trains: !b.Eval}.Writes()
	if err != nil {
		return fmt.Errorf("hazard: %w", err)
	}
	if !b.Eval {
		for t := range p.set.Layout.Tables {
			var rows []int64
			for i := start[t]; i < start[t+1]; i++ {
				if slots[i] < 0 {
					rows = append(rows, ids[i])
				}
			}
			if len(rows) > 0 {
				w = append(w, hazard.WriteSet{Stage: string(hazard.Train), Kind: hazard.HostRow, Table: t, Index: rows})
			}
		}
	}
	return p.set.Hazards.Plan(b.Seq, w)
}

// create builds a plan stage from its decoded config (NewFactory).
func create(_ context.Context, set stage.Settings, c *Config) (any, error) {
	p := &planner{set: set, cfg: c}
	var err error
	p.dev, err = set.Device("device", c.Device)
	return p, err
}
