package filter

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/stages/internal/stagetest"
)

// reference sorts every candidate: the top-k any correct filter returns.
func reference(scores []float32, k int) []int64 {
	idx := make([]int64, len(scores))
	for i := range idx {
		idx[i] = int64(i)
	}
	sort.SliceStable(idx, func(a, b int) bool { return better(scores, idx[a], idx[b]) })
	return idx[:min(k, len(idx))]
}

func TestTopK(t *testing.T) {
	scores := []float32{0.2, 0.9, 0.5, 0.9, 0.1, 0.7}
	if got, want := TopK(scores, 3, make([]int64, 3)), []int64{1, 3, 5}; !slices.Equal(got, want) {
		t.Errorf("TopK = %v, want %v (ties to the lower index)", got, want)
	}
	if got := TopK(scores, 1, make([]int64, 1)); !slices.Equal(got, []int64{1}) {
		t.Errorf("TopK k=1 = %v", got)
	}
	if got := TopK(scores, 6, nil); !slices.Equal(got, []int64{1, 3, 5, 2, 0, 4}) {
		t.Errorf("TopK k=n = %v", got)
	}
	nan := float32(math.NaN())
	if got := TopK([]float32{nan, 0.1, nan, 0.3}, 3, nil); !slices.Equal(got, []int64{3, 1, 0}) {
		t.Errorf("TopK with NaN = %v, want NaN last", got)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := 1 + rng.IntN(300)
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(rng.IntN(20)) / 20 // many ties
		}
		k := 1 + rng.IntN(n)
		if got, want := TopK(s, k, make([]int64, k)), reference(s, k); !slices.Equal(got, want) {
			t.Fatalf("trial %d (n %d, k %d): TopK = %v, want %v", trial, n, k, got, want)
		}
	}
}

func TestNDCG(t *testing.T) {
	labels := []float32{0, 1, 0, 1}
	if v, ok := NDCG([]int64{1, 3}, labels); !ok || v != 1 {
		t.Errorf("ideal order: %v %v, want 1", v, ok)
	}
	// Positions 1 and 2 hold a miss and a hit: DCG = 1/log2(3); the ideal
	// list of two holds both relevant candidates: 1 + 1/log2(3).
	want := (1 / math.Log2(3)) / (1 + 1/math.Log2(3))
	if v, ok := NDCG([]int64{0, 1}, labels); !ok || math.Abs(v-want) > 1e-12 {
		t.Errorf("one hit at position 2: %v, want %v", v, want)
	}
	if !slices.Equal(labels, []float32{0, 1, 0, 1}) {
		t.Errorf("NDCG changed the labels: %v", labels)
	}
	if _, ok := NDCG([]int64{0, 2}, []float32{0, 0, 0, 0}); ok {
		t.Error("NDCG defined with no relevant candidate")
	}
}

func TestFilterStage(t *testing.T) {
	e := stagetest.New(t, stagetest.Options{})
	f, err := stagetest.Create(t, NewFactory(), e.Set, func(c stage.Config) { c.(*Config).K = 2 })
	if err != nil {
		t.Fatal(err)
	}
	b := e.Batch(t, 0)
	scores, _ := b.Float32s(batch.Scores)
	labels, _ := b.Float32s(batch.Labels)
	copy(scores, []float32{0.3, 0.8, 0.1, 0.6})
	copy(labels, []float32{0, 0, 1, 1})
	stagetest.Process(t, f, b)
	topk, _ := b.Int64s(batch.TopK)
	if !slices.Equal(topk[:2], []int64{1, 3}) || b.Stats["kept"] != 2 || b.Stats["modeled_ns"] <= 0 {
		t.Errorf("topk %v, stats %v", topk[:2], b.Stats)
	}
	pts := e.Set.Metrics.Series("ndcg")
	want := (1 / math.Log2(3)) / (1 + 1/math.Log2(3))
	if len(pts) != 1 || math.Abs(pts[0].Value-want) > 1e-12 {
		t.Errorf("ndcg series %v, want one point %v", pts, want)
	}

	// A query with no relevant candidate has no NDCG; it is counted.
	b = e.Batch(t, 1)
	labels, _ = b.Float32s(batch.Labels)
	clear(labels)
	stagetest.Process(t, f, b)
	if err := f.(stage.Finisher).Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, _, values := e.Set.Metrics.Snapshot()
	if math.Abs(values["ndcg"]-want) > 1e-12 || values["ndcg_queries"] != 1 || values["ndcg_no_positive"] != 1 || values["ndcg_k"] != 2 {
		t.Errorf("final values %v", values)
	}
}

func TestFilterK(t *testing.T) {
	if err := (&Config{K: 0}).Validate(); err == nil || !strings.HasPrefix(err.Error(), "k: ") {
		t.Errorf("k 0: err = %v", err)
	}
	e := stagetest.New(t, stagetest.Options{}) // batch of 4
	if _, err := stagetest.Create(t, NewFactory(), e.Set, func(c stage.Config) { c.(*Config).K = 5 }); err == nil || !strings.Contains(err.Error(), "batch_size") {
		t.Errorf("k 5 of 4: err = %v", err)
	}
}
