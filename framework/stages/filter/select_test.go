package filter

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/stages/internal/stagetest"
)

func iota(n int) []int64 {
	c := make([]int64, n)
	for i := range c {
		c[i] = int64(i)
	}
	return c
}

// randomScores are n probabilities on a grid of steps, so that many tie.
func randomScores(rng *rand.Rand, n, steps int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(rng.IntN(steps+1)) / float32(steps)
	}
	return s
}

func TestExactSelectionIsStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 300 {
		n := 1 + rng.IntN(400)
		scores := randomScores(rng, n, 20)
		k := 1 + rng.IntN(n)
		// Every candidate: the first k of a stable sort.
		sel := Selector{K: k, Mode: Exact, SubBatches: 1}
		if got, want := sel.Select(scores, iota(n), make([]int64, n)).Kept, reference(scores, k); !slices.Equal(got, want) {
			t.Fatalf("trial %d (n %d, k %d): %v, want %v", trial, n, k, got, want)
		}
		// A subset (an upstream filter's survivors): the first k of a
		// stable sort of the subset, by query index.
		var cands []int64
		for i := range n {
			if rng.IntN(3) > 0 {
				cands = append(cands, int64(i))
			}
		}
		var want []int64
		ref := reference(scores, n)
		for _, c := range ref {
			if _, in := slices.BinarySearch(cands, c); in && len(want) < k {
				want = append(want, c)
			}
		}
		if got := sel.Select(scores, cands, make([]int64, n)).Kept; !slices.Equal(got, want) {
			t.Fatalf("trial %d subset: %v, want %v", trial, got, want)
		}
	}
}

func binOf(s float32, bins int) int {
	return min(int(math.Floor(float64(s)*float64(bins))), bins-1)
}

func TestBucketHoldsExactTopK(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	checked := 0
	for trial := range 1000 {
		n := 1 + rng.IntN(300)
		scores := randomScores(rng, n, 1+rng.IntN(200))
		k := 1 + rng.IntN(n)
		bins := 1 + rng.IntN(32)
		threshold := []float64{0, 0.5, rng.Float64()}[rng.IntN(3)]
		kept, passed := BucketTopK(scores, k, bins, threshold, nil)
		var above int
		for _, s := range scores {
			if float64(s) >= threshold {
				above++
			}
		}
		if passed != above {
			t.Fatalf("trial %d: passed %d, %d reach the threshold", trial, passed, above)
		}
		if len(kept) < min(k, passed) || (passed < k && len(kept) != passed) {
			t.Fatalf("trial %d: kept %d of %d passing, k %d", trial, len(kept), passed, k)
		}
		in := make([]bool, n)
		lowest := bins
		for i, c := range kept {
			in[c] = true
			if float64(scores[c]) < threshold {
				t.Fatalf("trial %d: kept %d scores %v below the threshold %v", trial, c, scores[c], threshold)
			}
			b := binOf(scores[c], bins)
			if i > 0 && b > binOf(scores[kept[i-1]], bins) {
				t.Fatalf("trial %d: bins out of order at %d", trial, i)
			}
			lowest = min(lowest, b)
		}
		// Whole bins: every passing candidate of a kept bin is kept, and
		// no dropped passing candidate lies in a higher bin.
		for i, s := range scores {
			if float64(s) >= threshold && !in[i] && binOf(s, bins) >= lowest {
				t.Fatalf("trial %d: candidate %d (bin %d) dropped, lowest kept bin %d", trial, i, binOf(s, bins), lowest)
			}
		}
		ref := reference(scores, k)
		if float64(scores[ref[len(ref)-1]]) >= threshold {
			checked++
			for _, c := range ref {
				if !in[c] {
					t.Fatalf("trial %d (n %d, k %d, bins %d, θ %v): exact top-k candidate %d missing from %v", trial, n, k, bins, threshold, c, kept)
				}
			}
		}
	}
	if checked < 200 {
		t.Errorf("only %d trials had the k-th best above the threshold", checked)
	}
}

func TestBucketEdges(t *testing.T) {
	// 0.5 exactly passes and 1.0 is the top bin; NaN never passes.
	nan := float32(math.NaN())
	kept, passed := BucketTopK([]float32{0.49, 0.5, 1, nan, 0.97}, 2, 16, 0.5, nil)
	if passed != 3 || !slices.Equal(kept, []int64{2, 4}) {
		t.Errorf("kept %v passed %d, want [2 4] 3", kept, passed)
	}
	kept, _ = BucketTopK([]float32{0.49, 0.5, 1, nan, 0.97}, 3, 16, 0.5, nil)
	if !slices.Equal(kept, []int64{2, 4, 1}) {
		t.Errorf("kept %v, want [2 4 1]", kept)
	}
	if kept, passed = BucketTopK([]float32{0.1, 0.2}, 1, 16, 0.5, nil); len(kept) != 0 || passed != 0 {
		t.Errorf("nothing passes: kept %v passed %d", kept, passed)
	}
}

func TestBucketShortFallback(t *testing.T) {
	scores := []float32{0.9, 0.1, 0.2, 0.6, 0.3}
	sel := Selector{K: 3, Mode: Bucket, Bins: 16, Threshold: 0.5, Fallback: FallbackNone, SubBatches: 1}
	got := sel.Select(scores, iota(5), make([]int64, 5))
	if got.Short != 1 || !slices.Equal(got.Kept, []int64{0, 3}) {
		t.Errorf("fallback none: %+v", got)
	}
	sel.Fallback = FallbackExact
	got = sel.Select(scores, iota(5), make([]int64, 5))
	if got.Short != 1 || !slices.Equal(got.Kept, []int64{0, 3, 4}) {
		t.Errorf("fallback exact: %+v", got)
	}
}

func TestSubBatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 300 {
		n := 1 + rng.IntN(300)
		scores := randomScores(rng, n, 50)
		k := 1 + rng.IntN(n)
		for _, mode := range []string{Exact, Bucket} {
			one := Selector{K: k, Mode: mode, Bins: 16, Threshold: 0.5, Fallback: FallbackNone, SubBatches: 1}
			// sub_batches 1 is no sub-batching: the plain selection.
			var want []int64
			if mode == Exact {
				want = TopK(scores, k, nil)
			} else {
				want, _ = BucketTopK(scores, k, 16, 0.5, nil)
			}
			if got := one.Select(scores, iota(n), make([]int64, n)).Kept; !slices.Equal(got, want) {
				t.Fatalf("trial %d %s: sub_batches 1 %v, plain %v", trial, mode, got, want)
			}
		}
		// Exact over s sub-batches: each contributes exactly its own top
		// share; the union is k distinct candidates, best first.
		s := 1 + rng.IntN(k)
		sel := Selector{K: k, Mode: Exact, SubBatches: s}
		got := sel.Select(scores, iota(n), make([]int64, n)).Kept
		var want []int64
		lo := 0
		for j := range s {
			hi := lo + n/s
			if j < n%s {
				hi++
			}
			q := k / s
			if j < k%s {
				q++
			}
			for _, p := range TopK(scores[lo:hi], q, nil) {
				want = append(want, int64(lo)+p)
			}
			lo = hi
		}
		if len(got) != len(want) {
			t.Fatalf("trial %d: %d kept, want %d", trial, len(got), len(want))
		}
		if !slices.IsSortedFunc(got, func(a, b int64) int {
			if better(scores, a, b) {
				return -1
			}
			return 1
		}) {
			t.Fatalf("trial %d: stitched output not best first: %v", trial, got)
		}
		slices.Sort(want)
		sorted := slices.Clone(got)
		slices.Sort(sorted)
		if !slices.Equal(sorted, want) || len(slices.Compact(sorted)) != len(got) {
			t.Fatalf("trial %d (n %d k %d s %d): %v, want the shares %v", trial, n, k, s, got, want)
		}
	}
}

// TestNDCGIsOfTheWholeQuery: the ideal list comes from every label of the
// query, whichever candidates survived and in whatever order the query
// lists them.
func TestNDCGIsOfTheWholeQuery(t *testing.T) {
	labels := []float32{1, 0, 0, 1, 0, 0}
	// A frontend that dropped both positives: 0, not undefined.
	if v, ok := NDCGAt([]int64{1, 2}, labels, 2); !ok || v != 0 {
		t.Errorf("no positive kept: %v %v, want 0 true", v, ok)
	}
	// One positive kept at the top of a list of two: DCG 1, ideal 1 +
	// 1/log2 3 over the query (not 1, the ideal of the survivors).
	want := 1 / (1 + 1/math.Log2(3))
	if v, ok := NDCGAt([]int64{3, 1}, labels, 2); !ok || math.Abs(v-want) > 1e-15 {
		t.Errorf("one of two: %v, want %v", v, want)
	}
	// A short list is measured at the full depth.
	if v, _ := NDCGAt([]int64{3}, labels, 2); math.Abs(v-want) > 1e-15 {
		t.Errorf("short list: %v, want %v", v, want)
	}
	// Permuting the query's candidates permutes the indices, not the NDCG.
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := range 100 {
		n := 2 + rng.IntN(200)
		scores := randomScores(rng, n, 1<<20)
		labs := make([]float32, n)
		for i := range labs {
			labs[i] = float32(rng.IntN(4) / 3)
		}
		k := 1 + rng.IntN(n)
		perm := rng.Perm(n)
		ps, pl := make([]float32, n), make([]float32, n)
		for i, p := range perm {
			ps[p], pl[p] = scores[i], labs[i]
		}
		v1, ok1 := NDCGAt(TopK(scores, k, nil), labs, k)
		v2, ok2 := NDCGAt(TopK(ps, k, nil), pl, k)
		if ok1 != ok2 || math.Abs(v1-v2) > 1e-12 && uniqueScores(scores) {
			t.Fatalf("trial %d: %v %v vs permuted %v %v", trial, v1, ok1, v2, ok2)
		}
	}
}

func uniqueScores(s []float32) bool {
	c := slices.Clone(s)
	slices.Sort(c)
	return len(slices.Compact(c)) == len(s)
}

// TestFilterOnSurvivors: a filter after one that kept every candidate
// ranks as a filter over the whole query, and one after a narrower filter
// chooses among the survivors only.
func TestFilterOnSurvivors(t *testing.T) {
	e := stagetest.New(t, stagetest.Options{})
	front, err := stagetest.Create(t, NewFactory(), e.Set, func(c stage.Config) { c.(*Config).K = 4 })
	if err != nil {
		t.Fatal(err)
	}
	back, err := stagetest.Create(t, NewFactory(), e.Set, func(c stage.Config) {
		c.(*Config).K, c.(*Config).Candidates = 2, Survivors
	})
	if err != nil {
		t.Fatal(err)
	}
	alone, _ := stagetest.Create(t, NewFactory(), e.Set, func(c stage.Config) { c.(*Config).K = 2 })
	b := e.Batch(t, 0)
	scores, _ := b.Float32s(batch.Scores)
	labels, _ := b.Float32s(batch.Labels)
	copy(scores, []float32{0.3, 0.8, 0.1, 0.6})
	copy(labels, []float32{0, 0, 1, 1})
	stagetest.Process(t, front, b)
	stagetest.Process(t, back, b)
	topk, _ := b.Int64s(batch.TopK)
	got := slices.Clone(topk[:b.Stats["kept"]])
	stagetest.Process(t, alone, b)
	if want := topk[:b.Stats["kept"]]; !slices.Equal(got, want) {
		t.Errorf("after a frontend keeping all: %v, alone %v", got, want)
	}
	// Survivors {2, 0} (as a k=2 frontend on other scores would leave).
	copy(topk, []int64{2, 0})
	b.SetStat("kept", 2)
	back2, _ := stagetest.Create(t, NewFactory(), e.Set, func(c stage.Config) {
		c.(*Config).K, c.(*Config).Candidates = 1, Survivors
	})
	stagetest.Process(t, back2, b)
	if topk[0] != 0 || b.Stats["kept"] != 1 {
		t.Errorf("among survivors {0, 2}: %v kept %d, want [0]", topk[:1], b.Stats["kept"])
	}
	// Without an upstream filter: a clear error.
	nb := e.Batch(t, 1)
	if err := back.(stage.Stage).Process(context.Background(), nb); err == nil || !strings.Contains(err.Error(), "kept") {
		t.Errorf("no survivors: err = %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	c := NewFactory().CreateDefaultConfig().(*Config)
	c.Mode, c.Bins, c.Threshold, c.Fallback, c.SubBatches, c.Candidates, c.NDCGK = "heap", 0, 1.5, "zero", 17, "some", -1
	err := c.Validate()
	for _, key := range []string{"mode: ", "bins: ", "threshold: ", "fallback: ", "sub_batches: ", "candidates: ", "ndcg_k: "} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("missing %q in %v", key, err)
		}
	}
}
