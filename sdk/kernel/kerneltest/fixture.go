package kerneltest

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// dim is every table's row width; DLRM's dot interaction needs one width.
const dim = 8

// batchSize is the number of bags per table.
const batchSize = 16

// shapes are the tables the suite builds.
var shapes = []plugin.Table{{Rows: 100, Dim: dim}, {Rows: 37, Dim: dim}, {Rows: 500, Dim: dim}}

// fixture is a batch of bags over tables, all carved out of one region at
// non-zero offsets, so a kernel that ignores Ref.Offset is caught.
type fixture struct {
	stride  int // floats per row: dim, or more with room for state
	arena   *region.Region
	tables  []kernel.Table
	bags    kernel.Bags
	indices [][]int64 // per table, the table's indices
	offsets [][]int64 // per table, batchSize+1 offsets
	pooled  region.Ref
	// coalesced has room for every lookup of every table.
	coalesced kernel.Coalesced
}

// carve hands out 64-byte aligned sub-refs of a region.
type carve struct {
	r   *region.Region
	off int64
}

func (c *carve) take(n int64) region.Ref {
	c.off += 64 // a gap, so an offset off by one row shows
	ref := c.r.Ref().Sub(c.off, n)
	c.off += (n + 63) / 64 * 64
	return ref
}

// newFixture builds tables of random rows and bags of 0 to 6 random rows
// (duplicates included; bag 0 of table 1 and the last bag of every table
// are empty).
func newFixture(t testing.TB, seed uint64) *fixture {
	t.Helper()
	return newStridedFixture(t, seed, dim)
}

// newStridedFixture is newFixture with rows stride floats apart; floats
// [dim, stride) of each row are random and positive, as optimizer state
// (sums of squares) is.
func newStridedFixture(t testing.TB, seed uint64, stride int) *fixture {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 99))
	f := &fixture{stride: stride}
	var lookups []int
	for ti, s := range shapes {
		offs := make([]int64, batchSize+1)
		var idx []int64
		for b := 0; b < batchSize; b++ {
			n := rng.IntN(7)
			if (ti == 1 && b == 0) || b == batchSize-1 {
				n = 0
			}
			for range n {
				idx = append(idx, rng.Int64N(s.Rows))
			}
			if ti == 0 && b == 2 && n > 0 {
				idx = append(idx, idx[len(idx)-1]) // a row twice in one bag
			}
			offs[b+1] = int64(len(idx))
		}
		f.indices = append(f.indices, idx)
		f.offsets = append(f.offsets, offs)
		lookups = append(lookups, len(idx))
	}

	var size int64 = 1 << 12
	for ti, s := range shapes {
		size += 4*s.Rows*int64(stride) + 8*int64(lookups[ti]+batchSize+1) + 4*batchSize*dim + 4*64
		size += 8*int64(lookups[ti]) + 4*int64(lookups[ti])*dim + 2*64
	}
	arena, err := region.Create("kerneltest", size)
	if err != nil {
		t.Fatalf("create region: %v", err)
	}
	t.Cleanup(func() { arena.Close() })
	f.arena = arena
	c := &carve{r: arena}

	for _, s := range shapes {
		ref := c.take(4 * s.Rows * int64(stride))
		rows := f.floats(ref)
		for i := range rows {
			if i%stride < dim {
				rows[i] = float32(rng.Float64()*2 - 1)
			} else {
				rows[i] = float32(rng.Float64() + 0.01)
			}
		}
		tab := kernel.Table{Data: ref, Rows: s.Rows, Dim: dim}
		if stride != dim {
			tab.Stride = stride
		}
		f.tables = append(f.tables, tab)
	}
	var total int64
	for _, idx := range f.indices {
		total += int64(len(idx))
	}
	f.bags = kernel.Bags{Batch: batchSize, Indices: c.take(8 * max(total, 1)), Offsets: c.take(8 * int64(len(shapes)*(batchSize+1)))}
	all, offs := f.int64s(f.bags.Indices), f.int64s(f.bags.Offsets)
	var start int64
	for ti := range shapes {
		f.bags.IndexStart = append(f.bags.IndexStart, start)
		start += int64(copy(all[start:], f.indices[ti]))
		copy(offs[ti*(batchSize+1):], f.offsets[ti])
	}
	f.pooled = c.take(4 * int64(len(shapes)) * batchSize * dim)
	capacity := make([]int64, len(shapes))
	for ti := range capacity {
		capacity[ti] = int64(len(f.indices[ti]))
	}
	rowStart, gradStart, rowBytes, gradBytes := kernel.CoalescedLayout(f.tables, capacity)
	f.coalesced = kernel.Coalesced{Rows: c.take(max(rowBytes, 8)), Grads: c.take(max(gradBytes, 8)), RowStart: rowStart, GradStart: gradStart}
	return f
}

func (f *fixture) bytes(ref region.Ref) []byte {
	return f.arena.Bytes()[ref.Offset : ref.Offset+ref.Length]
}
func (f *fixture) floats(ref region.Ref) []float32 { return region.Float32s(f.bytes(ref)) }
func (f *fixture) int64s(ref region.Ref) []int64   { return region.Int64s(f.bytes(ref)) }

// rows copies every table's rows.
func (f *fixture) rows() [][]float32 {
	out := make([][]float32, len(f.tables))
	for i, tab := range f.tables {
		out[i] = append([]float32(nil), f.floats(tab.Data)...)
	}
	return out
}

// fill sets every float of ref to v.
func (f *fixture) fill(ref region.Ref, v float32) {
	fs := f.floats(ref)
	for i := range fs {
		fs[i] = v
	}
}

// referencePool pools every bag as the contract says: float32, bag order;
// mean divides the sum by the bag size.
func referencePool(f *fixture, rows [][]float32, reduce kernel.Reduce) []float32 {
	out := make([]float32, 0, len(shapes)*batchSize*dim)
	for ti := range shapes {
		for b := 0; b < batchSize; b++ {
			acc := make([]float32, dim)
			bag := f.indices[ti][f.offsets[ti][b]:f.offsets[ti][b+1]]
			for _, row := range bag {
				for d := range acc {
					acc[d] += rows[ti][row*int64(f.stride)+int64(d)]
				}
			}
			if reduce == kernel.Mean && len(bag) > 0 {
				for d := range acc {
					acc[d] /= float32(len(bag))
				}
			}
			out = append(out, acc...)
		}
	}
	return out
}

// referenceScatter applies SGD as the contract says: every row of a bag
// receives the bag's gradient (over the bag size under mean); duplicates
// accumulate in position order and the sum is applied once.
func referenceScatter(f *fixture, rows [][]float32, grads []float32, reduce kernel.Reduce, lr float32) [][]float32 {
	return referenceUpdate(f, rows, grads, reduce, kernel.SGD, lr, 0)
}

// referenceCoalesce sums each row's expanded gradients in position order,
// per table; rows come back in ascending order.
func referenceCoalesce(f *fixture, grads []float32, reduce kernel.Reduce) (rows [][]int64, sums [][][]float32) {
	for ti := range shapes {
		sum := map[int64][]float32{}
		var order []int64
		for b := 0; b < batchSize; b++ {
			g := grads[(ti*batchSize+b)*dim : (ti*batchSize+b+1)*dim]
			bag := f.indices[ti][f.offsets[ti][b]:f.offsets[ti][b+1]]
			for _, row := range bag {
				acc, ok := sum[row]
				if !ok {
					acc = make([]float32, dim)
					sum[row] = acc
					order = append(order, row)
				}
				for d := range acc {
					if reduce == kernel.Mean {
						acc[d] += g[d] / float32(len(bag))
					} else {
						acc[d] += g[d]
					}
				}
			}
		}
		slices.Sort(order)
		var s [][]float32
		for _, row := range order {
			s = append(s, sum[row])
		}
		rows, sums = append(rows, order), append(sums, s)
	}
	return rows, sums
}

// referenceUpdate is referenceCoalesce followed by the optimizer step the
// sdk documents, state included.
func referenceUpdate(f *fixture, rows [][]float32, grads []float32, reduce kernel.Reduce, opt kernel.Optimizer, lr, eps float32) [][]float32 {
	out := make([][]float32, len(rows))
	ids, sums := referenceCoalesce(f, grads, reduce)
	for ti := range shapes {
		out[ti] = append([]float32(nil), rows[ti]...)
		for i, row := range ids[ti] {
			g := sums[ti][i]
			w := out[ti][row*int64(f.stride) : (row+1)*int64(f.stride)]
			switch opt {
			case kernel.SGD:
				for d := range g {
					w[d] -= lr * g[d]
				}
			case kernel.Adagrad:
				for d := range g {
					w[dim+d] += g[d] * g[d]
					w[d] -= lr * g[d] / (float32(math.Sqrt(float64(w[dim+d]))) + eps)
				}
			case kernel.RowWiseAdagrad:
				var sq float32
				for d := range g {
					sq += g[d] * g[d]
				}
				w[dim] += sq / dim
				den := float32(math.Sqrt(float64(w[dim]))) + eps
				for d := range g {
					w[d] -= lr * g[d] / den
				}
			}
		}
	}
	return out
}

// near reports whether got is within float32 rounding of want.
func near(got, want float32) bool {
	diff := math.Abs(float64(got - want))
	return diff <= 1e-5+1e-5*math.Abs(float64(want))
}
