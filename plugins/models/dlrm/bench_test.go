package dlrm

import (
	"math/rand/v2"
	"testing"

	"github.com/flowrun/flowrun/sdk/model/gemm"
	"github.com/flowrun/flowrun/sdk/region/regiontest"
)

// BenchmarkSgemm is the dense kernel on its own (sdk/model/gemm's
// BenchmarkDLRM has every layer's three products, against gonum): C [2048×256] = A [2048×512]
// · Bᵀ, the shape of a 512→256 layer's forward at batch 2048 (the
// scratchpipe preset's second bottom layer).
func BenchmarkSgemm(b *testing.B) {
	const m, k, n = 2048, 512, 256
	rng := rand.New(rand.NewPCG(1, 2))
	fill := func(n int) []float32 {
		xs := make([]float32, n)
		for i := range xs {
			xs[i] = rng.Float32()*2 - 1
		}
		return xs
	}
	A, B, C := fill(m*k), fill(n*k), make([]float32, m*n)
	for b.Loop() {
		gemm.Sgemm(false, true, m, n, k, A, k, B, k, false, C, n)
	}
	b.ReportMetric(2*m*n*k*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkStep is one training step of a preset at batch 2048 on the
// preset's own run (tables, dim; dim 16, graphs/no-cache.yaml's, for a
// preset that follows the run's), with Criteo's 13 dense features.
func BenchmarkStep(b *testing.B) {
	for _, name := range []string{"scratchpipe", "small"} {
		b.Run(name, func(b *testing.B) {
			p, _ := lookupPreset(name)
			dim := p.Dim
			if dim == 0 {
				dim = 16
			}
			sh := shape{tables: max(p.Tables, 8), dim: dim, dense: 13, batch: 2048}
			m := configured(b, sh, 1, `{"preset": "`+name+`"}`)
			a := regiontest.New(b, 1<<28)
			req := newTeacher(sh, rand.New(rand.NewPCG(1, 2))).batch(sh, rand.New(rand.NewPCG(3, 4))).request(a, true)
			var flops int64
			cpu0 := processCPU()
			for b.Loop() {
				flops += runStep(b, m, req).FLOPs
			}
			b.ReportMetric(float64(flops)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			b.ReportMetric(float64(flops)/float64(b.N)/1e9, "GFLOP/step")
			// The process's CPU time per step: with -cpu 1 the step's own
			// work even when other jobs share the cores; with more, the
			// work of all its goroutines (what parallelism costs).
			if cpu := processCPU() - cpu0; cpu > 0 {
				b.ReportMetric(cpu*1e3/float64(b.N), "cpu-ms/step")
			}
		})
	}
}
