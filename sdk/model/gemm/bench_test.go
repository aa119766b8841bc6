package gemm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// layerShape is one fully connected layer of a DLRM preset at a batch.
type layerShape struct {
	model         string
	in, out, rows int
}

// dlrmShapes are the layers of graphs/no-cache.yaml's model (preset small,
// dim 16, 8 tables: bottom 13-64-32-16, top 52-128-128-64-32-1, batch 512)
// and of the scratchpipe preset (bottom 13-512-256-128, top
// 164-1024-1024-512-256-1 with 8 tables of dim 128, batch 2048).
func dlrmShapes() []layerShape {
	var out []layerShape
	add := func(model string, rows int, widths ...int) {
		for i := 1; i < len(widths); i++ {
			out = append(out, layerShape{model, widths[i-1], widths[i], rows})
		}
	}
	add("small-bot", 512, 13, 64, 32, 16)
	add("small-top", 512, 52, 128, 128, 64, 32, 1)
	add("scratchpipe-bot", 2048, 13, 512, 256, 128)
	add("scratchpipe-top", 2048, 164, 1024, 1024, 512, 256, 1)
	return out
}

// product is one of a layer's three GEMMs: the forward y = x·Wᵀ
// (NoTrans×Trans), the weight gradient dW = dyᵀ·x (Trans×NoTrans) and the
// input gradient dx = dy·W (NoTrans×NoTrans).
type product struct {
	name           string
	transA, transB bool
	m, n, k        int
	lda, ldb       int
}

func (l layerShape) products() []product {
	return []product{
		{"fwd", false, true, l.rows, l.out, l.in, l.in, l.in},
		{"dW", true, false, l.out, l.in, l.rows, l.out, l.in},
		{"dx", false, false, l.rows, l.in, l.out, l.out, l.in},
	}
}

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// BenchmarkDLRM runs every product of every layer of dlrmShapes with this
// package and with gonum's blas32 (run with -cpu 1 for one thread; both
// use GOMAXPROCS goroutines).
func BenchmarkDLRM(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, l := range dlrmShapes() {
		for _, p := range l.products() {
			ar, ac := p.m, p.k
			if p.transA {
				ar, ac = p.k, p.m
			}
			br, bc := p.k, p.n
			if p.transB {
				br, bc = p.n, p.k
			}
			a, bm, c := fill(rng, ar*ac), fill(rng, br*bc), make([]float32, p.m*p.n)
			flops := 2 * float64(p.m) * float64(p.n) * float64(p.k)
			name := fmt.Sprintf("%s/%d-%d/%s/m%d_n%d_k%d", l.model, l.in, l.out, p.name, p.m, p.n, p.k)
			b.Run(name+"/gemm", func(b *testing.B) {
				cpu := startThreadCPU()
				for b.Loop() {
					Sgemm(p.transA, p.transB, p.m, p.n, p.k, a, p.lda, bm, p.ldb, false, c, p.n)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				if s := cpu(); s > 0 {
					b.ReportMetric(flops*float64(b.N)/s/1e9, "cpu-GFLOP/s")
				}
			})
			b.Run(name+"/gonum", func(b *testing.B) {
				A := blas32.General{Rows: ar, Cols: ac, Stride: ac, Data: a}
				B := blas32.General{Rows: br, Cols: bc, Stride: bc, Data: bm}
				C := blas32.General{Rows: p.m, Cols: p.n, Stride: p.n, Data: c}
				for b.Loop() {
					blas32.Gemm(trans(p.transA), trans(p.transB), 1, A, B, 0, C)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkKernel is the micro-kernel alone on L1-resident panels (k =
// kc): its rate is the ceiling of Sgemm's.
func BenchmarkKernel(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	a, bp, c := fill(rng, kc*mr), fill(rng, kc*nr), make([]float32, mr*nr)
	for b.Loop() {
		kernel(kc, a, bp, c, nr, true)
	}
	b.ReportMetric(2*mr*nr*kc*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
