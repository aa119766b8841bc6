package modeltest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// The synthetic run's shape.
const (
	nTables   = 3
	dim       = 4
	batch     = 32
	nDense    = 4
	nPooled   = nTables * batch * dim
	setupSeed = 42
)

func (c config) setup(seed uint64) plugin.Setup {
	tables := make([]plugin.Table, nTables)
	for i := range tables {
		tables[i] = plugin.Table{Rows: 1000, Dim: dim}
	}
	return plugin.Setup{
		RunID:         "modeltest",
		Seed:          seed,
		Tables:        tables,
		BatchSize:     batch,
		Lookups:       1,
		DenseFeatures: nDense,
		Options:       c.options,
	}
}

// fixture is one batch in its own region, with refs for every array.
type fixture struct {
	r                                   *region.Region
	pooled, dense, labels, grad, scores region.Ref
}

// newFixture builds a linearly separable batch: a planted teacher labels
// each sample by the sign of a linear function of its pooled and dense
// inputs (14 of the 32 positive).
func newFixture(t testing.TB) *fixture {
	t.Helper()
	sizes := []int64{4 * nPooled, 4 * batch * nDense, 4 * batch, 4 * nPooled, 4 * batch}
	var total int64
	for _, s := range sizes {
		total += s + 64
	}
	r, err := region.Create("modeltest", total)
	if err != nil {
		t.Fatalf("create region: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	f := &fixture{r: r}
	var off int64 = 64
	refs := []*region.Ref{&f.pooled, &f.dense, &f.labels, &f.grad, &f.scores}
	for i, s := range sizes {
		*refs[i] = r.Ref().Sub(off, s)
		off += s + 64
	}

	rng := rand.New(rand.NewPCG(11, 12))
	pooled, dense, labels := f.floats(f.pooled), f.floats(f.dense), f.floats(f.labels)
	for i := range pooled {
		pooled[i] = float32(rng.NormFloat64())
	}
	for i := range dense {
		dense[i] = float32(rng.NormFloat64())
	}
	teacher := make([]float64, nTables*dim+nDense)
	for i := range teacher {
		teacher[i] = rng.NormFloat64()
	}
	for s := range batch {
		var z float64
		for tb := range nTables {
			for d := range dim {
				z += teacher[tb*dim+d] * float64(pooled[(tb*batch+s)*dim+d])
			}
		}
		for d := range nDense {
			z += teacher[nTables*dim+d] * float64(dense[s*nDense+d])
		}
		if z > 0 {
			labels[s] = 1
		}
	}
	return f
}

func (f *fixture) floats(ref region.Ref) []float32 {
	return region.Float32s(f.r.Bytes()[ref.Offset : ref.Offset+ref.Length])
}

func (f *fixture) step(seq uint64, train bool) *model.StepRequest {
	req := &model.StepRequest{
		Seq: seq, Batch: batch, Pooled: f.pooled, Dense: f.dense, Labels: f.labels,
		Train: train, Scores: f.scores,
	}
	if train {
		req.PooledGrad = f.grad
	}
	return req
}

// poison fills the outputs with NaN, so an output left unwritten shows.
func (f *fixture) poison() {
	for _, ref := range []region.Ref{f.grad, f.scores} {
		xs := f.floats(ref)
		for i := range xs {
			xs[i] = float32(math.NaN())
		}
	}
}

// inputs copies the inputs, to check a step leaves them alone.
func (f *fixture) inputs() []float32 {
	var out []float32
	for _, ref := range []region.Ref{f.pooled, f.dense, f.labels} {
		out = append(out, f.floats(ref)...)
	}
	return out
}
