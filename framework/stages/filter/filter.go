// Package filter is RecPipe's top-k filtering between inference stages: a
// batch's samples are one query's candidates, scored upstream; filter keeps
// the indices of the k highest scores, best first, in the batch's topk
// array (kept of them) for the next (larger) model to rank. It also
// measures the quality of that ordering against the labels of the whole
// query as NDCG, the metric RecPipe uses.
//
// The selection is exact (a bounded heap, ties to the lower index) or
// RPAccel's bucketed streaming unit (BucketTopK: CTR bins, a threshold,
// at least k out, whole bins), over every candidate or over an upstream
// filter's survivors, whole or in sub-batches (Selector). The package
// imports the batch and stage packages and the device SDK, never another
// stage kind.
package filter

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"sync"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/sdk/device"
)

// better reports whether candidate i ranks above candidate j: a higher
// score, any score above NaN, and on a tie the lower index, so the result
// is one total order whatever the scores.
func better(scores []float32, i, j int64) bool {
	a, b := scores[i], scores[j]
	if an, bn := a != a, b != b; an || bn {
		if an != bn {
			return bn
		}
		return i < j
	}
	if a != b {
		return a > b
	}
	return i < j
}

// TopK writes the indices of the k best scores into out[:k], best first,
// and returns out[:k]. It keeps a min-heap of the k best seen so far, the
// worst at its root, so it reads each score once in O(n log k).
func TopK(scores []float32, k int, out []int64) []int64 {
	k = max(min(k, len(scores)), 0)
	if len(out) < k {
		out = make([]int64, k)
	}
	h := out[:0]
	// worse orders the heap: the root is the candidate every other ranks above.
	worse := func(a, b int) bool { return better(scores, h[b], h[a]) }
	down := func(i int) {
		for {
			l, s := 2*i+1, i
			if l < len(h) && worse(l, s) {
				s = l
			}
			if r := l + 1; r < len(h) && worse(r, s) {
				s = r
			}
			if s == i {
				return
			}
			h[i], h[s] = h[s], h[i]
			i = s
		}
	}
	for i := range int64(len(scores)) {
		if len(h) < k {
			h = append(h, i)
			for c := len(h) - 1; c > 0; {
				p := (c - 1) / 2
				if !worse(c, p) {
					break
				}
				h[c], h[p] = h[p], h[c]
				c = p
			}
			continue
		}
		if k > 0 && better(scores, i, h[0]) {
			h[0] = i
			down(0)
		}
	}
	// Pop the worst to the back until the heap is empty: best first.
	for n := len(h) - 1; n > 0; n-- {
		h[0], h[n] = h[n], h[0]
		h = h[:n]
		down(0)
	}
	return out[:k]
}

// NDCG is the normalized discounted cumulative gain of a ranked list:
// DCG = Σ rel_i / log2(i+1) over positions i = 1..k, with rel the label of
// the candidate at position i, divided by the DCG of the best possible
// order of the same candidates' labels (RecPipe Sec. 2.2). ok is false
// when no candidate is relevant, where NDCG is undefined. It is NDCGAt
// at the list's own length.
func NDCG(ranked []int64, labels []float32) (ndcg float64, ok bool) {
	return NDCGAt(ranked, labels, len(ranked))
}

// NDCGAt is NDCG@depth of a ranked list against the whole query: the DCG
// of its first depth entries (all of them when it is shorter) over the
// ideal DCG of depth entries chosen from every label of the query, so a
// stage that kept fewer candidates, or dropped the relevant ones, scores
// lower (RecPipe's quality is the served list against the query, never
// against the survivors of an earlier stage).
func NDCGAt(ranked []int64, labels []float32, depth int) (ndcg float64, ok bool) {
	var dcg float64
	for i, c := range ranked[:min(depth, len(ranked))] {
		dcg += float64(labels[c]) / math.Log2(float64(i+2))
	}
	// The ideal list puts the highest labels first (TopK only reads them).
	var idcg float64
	depth = min(depth, len(labels))
	for i, c := range TopK(labels, depth, make([]int64, depth)) {
		idcg += float64(labels[c]) / math.Log2(float64(i+2))
	}
	if !(idcg > 0) {
		return 0, false
	}
	return dcg / idcg, true
}

type filter struct {
	set   stage.Settings
	cfg   *Config
	name  string // the graph's device name
	dev   device.Device
	sel   Selector
	cands []int64
	// prefix names the metrics: "" for the filter that serves the list
	// (a sink: its NDCG is the graph's), "filter.NAME." for one between
	// stages.
	prefix string

	mu         sync.Mutex
	ndcgSum    float64
	ndcgCount  int
	noPositive int
	keptSum    int64
	short      int64
	batches    int64
}

func (f *filter) Process(ctx context.Context, b *batch.Batch) error {
	n := f.set.Layout.BatchSize
	scores, labels, err := batch.Outcomes(b, n)
	if err != nil {
		return err
	}
	if err := f.candidates(b, n); err != nil {
		return err
	}
	topk, err := batch.TopK.View(b)
	if err != nil {
		return err
	}
	if len(topk) < min(f.cfg.K, len(f.cands)) {
		return fmt.Errorf("batch %d: topk holds %d, fewer than k = %d", b.Seq, len(topk), f.cfg.K)
	}
	got := f.sel.Select(scores, f.cands, topk)
	Kept.Set(b, int64(len(got.Kept)))
	if f.cfg.Mode == Bucket {
		Short.Set(b, int64(min(got.Short, 1)))
	}
	f.record(b.Seq, got, labels)
	if f.dev != nil {
		ns, err := f.charge(ctx, b, got)
		if err != nil {
			return err
		}
		batch.ModeledNs.Set(b, ns)
	}
	return nil
}

// candidates sets f.cands to the query indices the filter ranks, in
// ascending order: every candidate, or the upstream filter's survivors.
func (f *filter) candidates(b *batch.Batch, n int) error {
	var err error
	f.cands, err = batch.Candidates(b, "filter "+f.set.Name, n, f.cfg.Candidates == Survivors, f.cands)
	return err
}

// record adds the query's NDCG (against every label of the query) and
// what was kept to the run's metrics.
func (f *filter) record(seq uint64, got Selection, labels []float32) {
	v, ok := NDCGAt(got.Kept, labels, f.cfg.depth())
	if ok {
		f.set.Metrics.Append(f.prefix+"ndcg", seq, v)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if ok {
		f.ndcgSum += v
		f.ndcgCount++
	} else {
		f.noPositive++
	}
	f.keptSum += int64(len(got.Kept))
	f.short += int64(min(got.Short, 1))
	f.batches++
}

// charge charges the filter's device: reading the candidates' scores,
// the selection, and writing the kept indices. Exact: one comparison per
// candidate and log2 k more for each that enters the heap (bounded by
// every candidate). Bucket: one binning per candidate, one pass more over
// them to stream the kept bins out, and an exact selection on top when
// it fell back.
func (f *filter) charge(ctx context.Context, b *batch.Batch, got Selection) (int64, error) {
	m := int64(len(f.cands))
	ops := []device.Op{{Name: "read-scores", Kind: device.Read, Bytes: 4 * m}}
	exact := device.Op{Name: "top-k", Kind: device.Compute, FLOPs: m * int64(1+bits.Len(uint(f.cfg.K)))}
	if f.cfg.Mode == Bucket {
		ops = append(ops, device.Op{Name: "bucket-top-k", Kind: device.Compute, FLOPs: 2 * m})
		if got.Short > 0 && f.cfg.Fallback == FallbackExact {
			ops = append(ops, exact)
		}
	} else {
		ops = append(ops, exact)
	}
	ops = append(ops, device.Op{Name: "write-topk", Kind: device.Write, Bytes: 8 * int64(len(got.Kept))})
	return stage.Charge(ctx, b, f.name, f.dev, ops...)
}

// Finish records the mean NDCG@k over the queries that had a relevant
// candidate, and how many had none; a filter between stages records its
// figures under filter.NAME., with the mean candidates it kept and the
// queries a bucket filter fell short on.
func (f *filter) Finish(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, p := f.set.Metrics, f.prefix
	if f.ndcgCount > 0 {
		m.Set(p+"ndcg", f.ndcgSum/float64(f.ndcgCount))
		m.Set(p+"ndcg_k", float64(f.cfg.depth()))
	}
	m.Set(p+"ndcg_queries", float64(f.ndcgCount))
	m.Set(p+"ndcg_no_positive", float64(f.noPositive))
	if p != "" && f.batches > 0 {
		m.Set(p+"kept", float64(f.keptSum)/float64(f.batches))
	}
	if f.cfg.Mode == Bucket {
		m.Set(p+"filter_short", float64(f.short))
	}
	return nil
}

// create builds a filter stage from its decoded config (NewFactory).
func create(_ context.Context, set stage.Settings, c *Config) (any, error) {
	if c.K > set.Layout.BatchSize {
		return nil, fmt.Errorf("k: %d is more than the %d candidates of a batch (dataset.batch_size)", c.K, set.Layout.BatchSize)
	}
	f := &filter{set: set, cfg: c, name: c.Device, sel: Selector{K: c.K, Mode: c.Mode, Bins: c.Bins,
		Threshold: c.Threshold, Fallback: c.Fallback, SubBatches: c.SubBatches}}
	if set.Graph != nil && len(set.Graph.Stages[set.Name].Out) > 0 {
		f.prefix = "filter." + set.Name + "."
	}
	var err error
	f.dev, err = set.Device("device", c.Device)
	return f, err
}
