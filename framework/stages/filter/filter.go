// Package filter is RecPipe's top-k filtering between inference stages: a
// batch's samples are one query's candidates, scored upstream; filter keeps
// the indices of the k highest scores, best first, in the batch's topk
// array for the next (larger) model to rank. It also measures the quality
// of that ordering against the labels as NDCG@k, the metric RecPipe uses.
//
// The selection is exact (a bounded heap, ties to the lower index), the
// reference that RPAccel's bucketed streaming unit approximates.
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
// when no candidate is relevant, where NDCG is undefined.
func NDCG(ranked []int64, labels []float32) (ndcg float64, ok bool) {
	var dcg float64
	for i, c := range ranked {
		dcg += float64(labels[c]) / math.Log2(float64(i+2))
	}
	// The ideal list puts the highest labels first (TopK only reads them).
	var idcg float64
	for i, c := range TopK(labels, len(ranked), make([]int64, len(ranked))) {
		idcg += float64(labels[c]) / math.Log2(float64(i+2))
	}
	if !(idcg > 0) {
		return 0, false
	}
	return dcg / idcg, true
}

type filter struct {
	set  stage.Settings
	k    int
	name string // the graph's device name
	dev  device.Device

	mu         sync.Mutex
	ndcgSum    float64
	ndcgCount  int
	noPositive int
}

func (f *filter) Process(ctx context.Context, b *batch.Batch) error {
	n := f.set.Layout.BatchSize
	scores, labels, err := batch.Outcomes(b, n)
	if err != nil {
		return err
	}
	topk, err := batch.TopK.View(b)
	if err != nil {
		return err
	}
	if len(topk) < f.k {
		return fmt.Errorf("batch %d: topk holds %d, fewer than k = %d", b.Seq, len(topk), f.k)
	}
	ranked := TopK(scores, f.k, topk)
	Kept.Set(b, int64(len(ranked)))
	if v, ok := NDCG(ranked, labels); ok {
		f.set.Metrics.Append("ndcg", b.Seq, v)
		f.mu.Lock()
		f.ndcgSum += v
		f.ndcgCount++
		f.mu.Unlock()
	} else {
		f.mu.Lock()
		f.noPositive++
		f.mu.Unlock()
	}
	if f.dev != nil {
		// One comparison per candidate, and log2 k more for each that
		// enters the heap (bounded by every candidate).
		cmp := int64(n) * int64(1+bits.Len(uint(f.k)))
		ns, err := stage.Charge(ctx, b, f.name, f.dev,
			device.Op{Name: "read-scores", Kind: device.Read, Bytes: 4 * int64(n)},
			device.Op{Name: "top-k", Kind: device.Compute, FLOPs: cmp},
			device.Op{Name: "write-topk", Kind: device.Write, Bytes: 8 * int64(len(ranked))})
		if err != nil {
			return err
		}
		batch.ModeledNs.Set(b, ns)
	}
	return nil
}

// Finish records the mean NDCG@k over the queries that had a relevant
// candidate, and how many had none.
func (f *filter) Finish(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ndcgCount > 0 {
		f.set.Metrics.Set("ndcg", f.ndcgSum/float64(f.ndcgCount))
		f.set.Metrics.Set("ndcg_k", float64(f.k))
	}
	f.set.Metrics.Set("ndcg_queries", float64(f.ndcgCount))
	f.set.Metrics.Set("ndcg_no_positive", float64(f.noPositive))
	return nil
}

// create builds a filter stage from its decoded config (NewFactory).
func create(_ context.Context, set stage.Settings, c *Config) (any, error) {
	if c.K > set.Layout.BatchSize {
		return nil, fmt.Errorf("k: %d is more than the %d candidates of a batch (dataset.batch_size)", c.K, set.Layout.BatchSize)
	}
	f := &filter{set: set, k: c.K, name: c.Device}
	var err error
	f.dev, err = set.Device("device", c.Device)
	return f, err
}
