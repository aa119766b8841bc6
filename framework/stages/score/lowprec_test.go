package score

import (
	"math"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/stages/internal/stagetest"
)

// TestScoreLowPrecision: over tables stored below FP32 (packed and
// emulated, every precision), score gives bit for bit the scores of the
// same batch over FP32 tables holding the values those rows read as
// (batch.Tables.ReadRow), with the same statistics, for every candidate
// and for an upstream filter's survivors; and it changes no stored row.
func TestScoreLowPrecision(t *testing.T) {
	for _, prec := range []string{"fp16", "int8", "int4", "int2"} {
		for _, storage := range []string{"packed", "emulated"} {
			for _, survivors := range []bool{false, true} {
				emb := config.Default().Embedding
				emb.Optimizer, emb.Precision, emb.Storage, emb.LowprecMinRows = "sgd", prec, storage, 0
				low := stagetest.New(t, stagetest.Options{Embedding: emb})
				ref := stagetest.New(t, stagetest.Options{})
				tabs := low.Set.Tables
				if tabs.Direct(0) {
					t.Fatalf("%s: table 0 is FP32", prec)
				}
				stored := make([][]float32, tabs.Len())
				for tab := range tabs.Len() {
					for r := range tabs.Rows {
						row := make([]float32, tabs.Stride)
						tabs.ReadRow(tab, r, row)
						stored[tab] = append(stored[tab], row...)
						copy(ref.Set.Tables.Row(tab, r), row)
					}
				}
				configure := func(c stage.Config) {
					if survivors {
						c.(*Config).Candidates = Survivors
					}
				}
				var scores [2][]float32
				var stats [2]map[string]int64
				for i, e := range []*stagetest.Env{low, ref} {
					s, err := stagetest.Create(t, NewFactory(), e.Set, configure)
					if err != nil {
						t.Fatal(err)
					}
					b := e.Batch(t, 0)
					e.Load(t, b)
					if survivors {
						keepEveryOther(t, b, e.Set.Layout.BatchSize)
					}
					stagetest.Process(t, s, b)
					sc, _ := b.Float32s(batch.Scores)
					scores[i], stats[i] = slices.Clone(sc[:e.Set.Layout.BatchSize]), b.Stats
				}
				name := prec + "/" + storage
				if !slices.EqualFunc(scores[0], scores[1], func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
					t.Errorf("%s survivors %v: scores %v, over the FP32 copy %v", name, survivors, scores[0], scores[1])
				}
				if stats[0]["scored"] != stats[1]["scored"] || stats[0]["scored"] == 0 {
					t.Errorf("%s: scored %d, over the FP32 copy %d", name, stats[0]["scored"], stats[1]["scored"])
				}
				for tab := range tabs.Len() {
					row := make([]float32, tabs.Stride)
					for r := range tabs.Rows {
						tabs.ReadRow(tab, r, row)
						if !slices.Equal(row, stored[tab][r*int64(tabs.Stride):(r+1)*int64(tabs.Stride)]) {
							t.Fatalf("%s: scoring changed table %d row %d", name, tab, r)
						}
					}
				}
			}
		}
	}
}

// keepEveryOther marks candidates 1, 3, 5, … as an upstream filter's
// survivors.
func keepEveryOther(t *testing.T, b *batch.Batch, n int) {
	t.Helper()
	topk, err := b.Int64s(batch.TopK)
	if err != nil {
		t.Fatal(err)
	}
	var kept int64
	for c := 1; c < n; c += 2 {
		topk[kept] = int64(c)
		kept++
	}
	b.SetStat("kept", kept)
}
