package engine

import (
	"context"
	"fmt"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/data"
	"github.com/flowrun/flowrun/framework/record"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/region"
)

// Recorder is handed every batch of a run, in sequence, as the stage that
// plans it left it: its lookups and the serving policy's decisions (a
// record.Writer keeps them, a record.Verifier checks a replay against
// them). In a graph without a plan the source's batches come, with their
// lookups only. An error fails the run at that batch.
type Recorder interface {
	Batch(record.Batch) error
}

// recordAt picks the stage whose batches the recorder gets: the one that
// produces the plan's decisions (batch.Slots), else the source. The
// engine asks the graph's declared fields, not a stage kind.
func (r *run) recordAt() (id string, planned bool) {
	for _, n := range r.nodes {
		for _, f := range n.Produces {
			if f.Name() == batch.Slots.Name() {
				return n.id, true
			}
		}
	}
	for _, n := range r.nodes {
		if n.In == "" {
			return n.id, false
		}
	}
	return "", false
}

// recordBatch hands b to the run's recorder when n is the stage it
// records at; from n's own goroutine, right after n processed b, so the
// arrays are n's output and the batches come in sequence.
func (r *run) recordBatch(n *node, b *batch.Batch) error {
	if r.opts.Record == nil {
		return nil
	}
	r.recordOnce.Do(func() { r.recordNode, r.recordPlanned = r.recordAt() })
	if n.id != r.recordNode {
		return nil
	}
	rb := record.Batch{Seq: b.Seq, Eval: b.Eval, Planned: r.recordPlanned}
	var err error
	if rb.IDs, err = batch.IDs.View(b); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if rb.Planned {
		if rb.Hits, err = batch.Hits.View(b); err != nil {
			return fmt.Errorf("record: %w", err)
		}
		if rb.Slots, err = batch.Slots.View(b); err != nil {
			return fmt.Errorf("record: %w", err)
		}
		if rb.Victims, err = batch.Victims.View(b); err != nil {
			return fmt.Errorf("record: %w", err)
		}
		nv := b.Stats[batch.VictimCount.Name()]
		if nv < 0 || 3*nv > int64(len(rb.Victims)) {
			return fmt.Errorf("record: batch %d has %d victims, room for %d", b.Seq, nv, len(rb.Victims)/3)
		}
		rb.Victims = rb.Victims[:3*nv]
	}
	return r.opts.Record.Batch(rb)
}

// WhatIf is policy c's outcome on a recorded stream: what it hit and
// missed of the training batches' lookups from batch From on, beside what
// the serving policy recorded for the same lookups.
type WhatIf struct {
	Plugin string  `json:"plugin"`
	Size   float64 `json:"size"`
	Rows   int64   `json:"rows"`
	// From and End bound the batches planned (From … End−1), the policy
	// cold at From.
	From uint64 `json:"from"`
	End  uint64 `json:"end"`
	// Hits and Misses count the training batches' lookups; Evictions the
	// rows the policy evicted.
	Hits      int64 `json:"hits"`
	Misses    int64 `json:"misses"`
	Evictions int64 `json:"evictions"`
	// RecordedHits and RecordedMisses are the serving policy's, from the
	// record, over the same lookups.
	RecordedHits   int64 `json:"recorded_hits"`
	RecordedMisses int64 `json:"recorded_misses"`
}

// HitRate is Hits over the lookups; RecordedHitRate the record's.
func (w WhatIf) HitRate() float64 { return rate(w.Hits, w.Misses) }

// RecordedHitRate is the serving policy's hit rate over the same lookups.
func (w WhatIf) RecordedHitRate() float64 { return rate(w.RecordedHits, w.RecordedMisses) }

func rate(h, m int64) float64 {
	if h+m == 0 {
		return 0
	}
	return float64(h) / float64(h+m)
}

// PlanRecorded plans the recorded stream from batch from to the
// stream's end with policy c, opened and configured as the run of
// opts.Graph would open it beside its cache (the graph's windows, c's
// size, the warm-up profile it asks for): each batch with the IDs of the
// future window after it, as plan sends them. It moves no row and trains
// nothing: the what-if of a policy on the exact lookups the run made.
func PlanRecorded(ctx context.Context, opts Options, c config.Cache, rec *record.Record, from uint64) (WhatIf, error) {
	shape, err := NewShape(opts.Graph)
	if err != nil {
		return WhatIf{}, err
	}
	r := &run{opts: opts, id: NewRunID(), shape: shape}
	pol, future, err := r.openCache(ctx, c)
	if err != nil {
		return WhatIf{}, err
	}
	offsets := shape.Layout.IndexStart()
	n := offsets[len(offsets)-1]
	mem, err := region.Create("what-if", int64(1+future)*n*8+n*8+3*n*8+n)
	if err != nil {
		return WhatIf{}, err
	}
	defer mem.Close()
	all, ref := mem.Bytes(), mem.Ref()
	idsBytes := int64(1+future) * n * 8
	ids := region.Int64s(all[:idsBytes])
	req := cache.PlanRequest{TableOffsets: offsets, Slots: ref.Sub(idsBytes, n*8),
		Victims: ref.Sub(idsBytes+n*8, 3*n*8), Hits: ref.Sub(idsBytes+4*n*8, n)}
	hits := all[idsBytes+4*n*8 : idsBytes+4*n*8+n]
	regen, err := lookupsOf(opts.Graph.Config, rec, n)
	if err != nil {
		return WhatIf{}, err
	}
	defer regen.close()
	maxRows := opts.Graph.Config.Dataset.MaxRows()
	w := WhatIf{Plugin: c.Plugin, Size: c.Size, Rows: min(c.CacheRows(maxRows), maxRows), From: max(from, rec.First), End: rec.End()}
	for seq := w.From; seq < w.End; seq++ {
		req.Seq, req.Future = seq, nil
		var head record.Batch
		for k := uint64(0); k <= uint64(future) && seq+k < w.End; k++ {
			b, err := regen.batch(seq + k)
			if err != nil {
				return w, err
			}
			if int64(len(b.IDs)) != n {
				return w, fmt.Errorf("recorded batch %d has %d lookups, this graph's batches %d", b.Seq, len(b.IDs), n)
			}
			copy(ids[int64(k)*n:int64(k+1)*n], b.IDs)
			at := ref.Sub(int64(k)*n*8, n*8)
			if k == 0 {
				head, req.IDs = b, at
			} else {
				req.Future = append(req.Future, cache.Window{Seq: b.Seq, IDs: at})
			}
		}
		res, err := pol.Plan(ctx, &req)
		if err != nil {
			return w, fmt.Errorf("what-if %s: plan batch %d: %w", c.Plugin, seq, err)
		}
		if !head.Eval {
			w.tally(res, hits[:n], head)
		}
	}
	return w, nil
}

// tally adds a planned training batch: the policy's hits from its flags
// (as the record counts the serving policy's), its evictions.
func (w *WhatIf) tally(res *cache.PlanResult, hits []uint8, rec record.Batch) {
	for i, h := range hits {
		if h != 0 {
			w.Hits++
		} else {
			w.Misses++
		}
		if rec.Planned {
			if rec.Hits[i] != 0 {
				w.RecordedHits++
			} else {
				w.RecordedMisses++
			}
		}
	}
	for _, t := range res.Tables {
		w.Evictions += t.Evictions
	}
}

// lookups gives a record's batches with their IDs: as recorded, or, in a
// record that omits them, regenerated from the dataset's source at the
// batch's position, as the warm-up profile reads them (the data are a
// function of the seed and the sequence).
type lookups struct {
	rec  *record.Record
	src  data.Source
	done func() error
	a    data.Arrays
}

func lookupsOf(cfg *config.Config, rec *record.Record, n int64) (*lookups, error) {
	l := &lookups{rec: rec}
	if rec.Lookups {
		return l, nil
	}
	var err error
	if l.src, l.done, err = data.OpenSource(cfg.Seed, cfg.Dataset); err != nil {
		return nil, fmt.Errorf("the record omits the lookups; regenerating them: %w", err)
	}
	l.a = data.NewArrays(cfg.Dataset)
	if int64(len(l.a.IDs)) != n {
		_ = l.done()
		return nil, fmt.Errorf("the record omits the lookups, and the dataset's batches have %d, the graph's %d", len(l.a.IDs), n)
	}
	return l, nil
}

func (l *lookups) batch(seq uint64) (record.Batch, error) {
	b, err := l.rec.Batch(seq)
	if err != nil || l.src == nil {
		return b, err
	}
	if err := l.src.Fill(seq, b.Eval, l.a); err != nil {
		return b, fmt.Errorf("regenerating batch %d: %w", seq, err)
	}
	b.IDs = l.a.IDs
	return b, nil
}

func (l *lookups) close() {
	if l.done != nil {
		_ = l.done()
	}
}
