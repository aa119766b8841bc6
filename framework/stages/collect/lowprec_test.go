package collect

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/stages/internal/stagetest"
)

// TestCollectStagesLowPrecisionRows: the missed rows of tables stored
// below FP32 (every precision, packed and emulated, with and without
// quantize_init, some rows written since and some still fresh), converted
// by the kernel's dequantize in one call for the batch, are bit for bit
// what batch.Tables.ReadRow reads.
func TestCollectStagesLowPrecisionRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, prec := range []string{"fp16", "int8", "int4", "int2"} {
		for _, storage := range []string{"packed", "emulated"} {
			for _, quantizeInit := range []bool{true, false} {
				emb := config.Default().Embedding
				emb.Optimizer, emb.Precision, emb.Storage, emb.LowprecMinRows, emb.QuantizeInit = "adagrad", prec, storage, 0, quantizeInit
				e := stagetest.New(t, stagetest.Options{CacheRows: 12, Sequential: true, Embedding: emb})
				c := newCollector(t, e)
				tabs, stride := e.Set.Tables, int64(e.Set.Layout.Stride)
				for _, row := range []int64{1, 5, 9, 12} { // written since; 7, 3, … stay fresh
					v := make([]float32, stride)
					for k := range v {
						v[k] = rng.Float32()*2 - 1
					}
					tabs.WriteRow(0, row, v, 1)
					tabs.WriteRow(1, row+1, v, 1)
				}
				b := e.Batch(t, 0)
				e.SetIDs(t, b, [][]int64{
					{5, 5, 7, 1, 2, 3, 5, 9, 10, 11, 12, 13},
					{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
				})
				e.Plan(t, b)
				stagetest.Process(t, c, b)
				n := b.Stats["collected_rows"]
				if n != 22 {
					t.Fatalf("collected_rows = %d, want 22", n)
				}
				missIndex, missRows, _ := arraysOf(t, b)
				want := make([]float32, stride)
				for i := range n {
					tab, row := missIndex[3*i], missIndex[3*i+1]
					tabs.ReadRow(int(tab), row, want)
					got := missRows[i*stride : (i+1)*stride]
					if !slices.EqualFunc(got, want, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
						t.Fatalf("%s %s init %v: staged table %d row %d = %v, ReadRow %v", prec, storage, quantizeInit, tab, row, got, want)
					}
				}
			}
		}
	}
}
