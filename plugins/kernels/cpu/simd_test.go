package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/sdk/kernel"
)

// randomView is a table of rows random rows of dim floats stride apart
// (starting at an odd float offset, so rows are not line-aligned), with
// batch bags of 0 to 24 lookups (some empty, duplicates common).
func randomView(rng *rand.Rand, rows, dim, stride, batch int) *tableView {
	data := make([]float32, 1+rows*stride)[1:]
	for i := range data {
		switch rng.IntN(50) {
		case 0:
			data[i] = float32(math.Copysign(0, -1)) // -0 must pool to +0, as from a cleared sum
		case 1:
			data[i] = float32(rng.NormFloat64() * 1e30)
		default:
			data[i] = float32(rng.NormFloat64())
		}
	}
	v := &tableView{data: data, dim: dim, stride: stride, off: make([]int64, batch+1)}
	for b := range batch {
		n := rng.IntN(25)
		if rng.IntN(5) == 0 {
			n = 0
		}
		for range n {
			v.idx = append(v.idx, rng.Int64N(int64(rows)))
		}
		v.off[b+1] = int64(len(v.idx))
	}
	v.pooled = make([]float32, batch*dim)
	return v
}

var testDims = []int{1, 3, 7, 8, 9, 15, 16, 24, 31, 32, 33, 40, 63, 64, 65, 100, 127, 128, 129, 136, 160, 200, 256, 257, 300}

// TestAVX2MatchesGo: the assembly and the pure-Go gather-reduce agree bit
// for bit on random tables of every shape the assembly splits differently
// (column blocks of 128, 32 and 8 floats and a Go tail), with strides wider
// than the rows, unaligned rows and empty bags.
func TestAVX2MatchesGo(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no AVX2 on this CPU")
	}
	rng := rand.New(rand.NewPCG(21, 22))
	for _, dim := range testDims {
		for _, pad := range []int{0, 1, 5} {
			for _, reduce := range []kernel.Reduce{kernel.Sum, kernel.Mean} {
				v := randomView(rng, 200, dim, dim+pad, 37)
				poolGo(v, reduce)
				want := append([]float32(nil), v.pooled...)
				for i := range v.pooled {
					v.pooled[i] = float32(math.NaN())
				}
				for _, ahead := range []int64{prefetchAhead, 0, 1, 40} {
					poolAVX2Ahead(v, reduce, ahead)
					if b, d, ok := firstDiff(v.pooled, want, dim); !ok {
						t.Fatalf("dim %d stride %d reduce %d prefetch %d: bag %d dim %d: avx2 %v, go %v", dim, dim+pad, reduce, ahead, b, d, v.pooled[b*dim+d], want[b*dim+d])
					}
				}
			}
		}
	}
}

// TestCoalesceAVX2MatchesGo: expand-coalesce on either loop gives the same
// rows and bits, and the rows come out ascending and unique.
func TestCoalesceAVX2MatchesGo(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no AVX2 on this CPU")
	}
	rng := rand.New(rand.NewPCG(23, 24))
	for _, dim := range testDims {
		for _, rows := range []int{3, 5000} { // many duplicates; radix-sorted
			for _, reduce := range []kernel.Reduce{kernel.Sum, kernel.Mean} {
				v := randomView(rng, rows, dim, dim, 64)
				for i := range v.pooled {
					v.pooled[i] = float32(rng.NormFloat64())
				}
				n := len(v.idx)
				var got [2]struct {
					rows  []int64
					grads []float32
				}
				for i, pool := range []bagPooler{coalesceGo, coalesceAVX2} {
					e, _ := expand(v, reduce, new(scratch))
					gs := make([]float32, n*dim)
					e.coalesce(pool, 0, len(e.rows), gs)
					got[i].rows, got[i].grads = e.rows, gs[:len(e.rows)*dim]
				}
				name := fmt.Sprintf("dim %d rows %d reduce %d", dim, rows, reduce)
				if fmt.Sprint(got[0].rows) != fmt.Sprint(got[1].rows) {
					t.Fatalf("%s: rows differ", name)
				}
				for i := 1; i < len(got[0].rows); i++ {
					if got[0].rows[i] <= got[0].rows[i-1] {
						t.Fatalf("%s: rows not ascending and unique at %d: %v", name, i, got[0].rows[i-1:i+1])
					}
				}
				if b, d, ok := firstDiff(got[1].grads, got[0].grads, dim); !ok {
					t.Fatalf("%s: row %d dim %d: avx2 %v, go %v", name, b, d, got[1].grads[b*dim+d], got[0].grads[b*dim+d])
				}
			}
		}
	}
}

// firstDiff compares bit patterns and returns the first difference as
// (row, column).
func firstDiff(got, want []float32, dim int) (int, int, bool) {
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			return i / dim, i % dim, false
		}
	}
	return 0, 0, true
}

// TestApplyAVX2MatchesGo: the assembly optimizer step and the pure-Go one
// agree bit for bit, state included, for every optimizer and row width the
// assembly takes (dims that are multiples of 8), with strides wider than
// the row and its state.
func TestApplyAVX2MatchesGo(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no AVX2 on this CPU")
	}
	rng := rand.New(rand.NewPCG(27, 28))
	for _, opt := range []kernel.Optimizer{kernel.SGD, kernel.Adagrad, kernel.RowWiseAdagrad} {
		for _, dim := range []int{8, 16, 24, 64, 128, 136, 256} {
			for _, pad := range []int{0, 3} {
				stride := dim + kernel.StateFloats(opt, dim) + pad
				const rows = 300
				data := make([]float32, 1+rows*stride)[1:]
				for i := range data {
					data[i] = float32(rng.NormFloat64())
				}
				for r := range rows { // state is a sum of squares
					for s := dim; s < dim+kernel.StateFloats(opt, dim); s++ {
						data[r*stride+s] = float32(math.Abs(rng.NormFloat64()))
					}
				}
				ids := rng.Perm(rows)[:100]
				slices.Sort(ids)
				var touched []int64
				for _, r := range ids {
					touched = append(touched, int64(r))
				}
				grads := make([]float32, len(touched)*dim)
				for i := range grads {
					grads[i] = float32(rng.NormFloat64() * 0.1)
				}
				want := slices.Clone(data)
				update{opt: opt, lr: 0.05, eps: 1e-8}.apply(want, dim, stride, touched, len(touched), grads)
				// In two calls, the first prefetching into the second's rows.
				avx2 := update{opt: opt, lr: 0.05, eps: 1e-8, avx2: true}
				avx2.apply(data, dim, stride, touched, 37, grads)
				avx2.apply(data, dim, stride, touched[37:], len(touched)-37, grads[37*dim:])
				if r, d, ok := firstDiff(data, want, stride); !ok {
					t.Fatalf("%s dim %d stride %d: row %d float %d: avx2 %v, go %v", opt, dim, stride, r, d, data[r*stride+d], want[r*stride+d])
				}
			}
		}
	}
}
