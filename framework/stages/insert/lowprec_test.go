package insert

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/stages/internal/stagetest"
)

// TestInsertWritesBackLowPrecision: victims of tables stored below FP32
// (every precision, packed and emulated, both roundings; two tables) are
// stored as batch.Tables.WriteRow stores them with the
// batch's key (the kernel's quantize, one call for the batch): each table
// then reads back, row for row, what a twin environment written row by row
// reads.
func TestInsertWritesBackLowPrecision(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for _, prec := range []string{"fp16", "int8", "int4", "int2"} {
		for _, storage := range []string{"packed", "emulated"} {
			for _, rounding := range []string{"nearest", "stochastic"} {
				emb := config.Default().Embedding
				emb.Optimizer, emb.Precision, emb.Storage, emb.Rounding = "adagrad", prec, storage, rounding
				emb.LowprecMinRows = 0
				opts := stagetest.Options{CacheRows: 8, Sequential: true, Embedding: emb}
				e, twin := stagetest.New(t, opts), stagetest.New(t, opts)
				in := newInserter(t, e)
				stride := e.Set.Layout.Stride
				var victims [][3]int64
				var rows [][]float32
				for i := range 6 {
					tab, row := int64(i%2), int64(3+5*i)
					v := make([]float32, stride)
					for k := range v {
						v[k] = rng.Float32()*2 - 1
					}
					victims, rows = append(victims, [3]int64{tab, row, int64(i / 2)}), append(rows, v)
					e.Set.Storage.Fill(int(tab), int64(i/2), row, v)
				}
				b := e.Batch(t, 0)
				staged(t, e, b, victims, nil, rows, nil)
				stagetest.Process(t, in, b)
				for i, v := range victims {
					twin.Set.Tables.WriteRow(int(v[0]), v[1], rows[i], b.Seq)
				}
				got, want := make([]float32, stride), make([]float32, stride)
				for tab := range e.Set.Tables.Len() {
					for r := range e.Set.Tables.Rows {
						e.Set.Tables.ReadRow(tab, r, got)
						twin.Set.Tables.ReadRow(tab, r, want)
						if !slices.EqualFunc(got, want, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
							t.Fatalf("%s %s %s: table %d row %d reads %v, written row by row %v", prec, storage, rounding, tab, r, got, want)
						}
					}
				}
				if e.Set.Tables.Direct(0) {
					t.Fatalf("%s: table 0 is FP32", prec)
				}
			}
		}
	}
}
