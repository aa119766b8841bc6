//go:build cgo && amd64

package cgather

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flowrun/flowrun/sdk/kernel"
)

// BenchmarkPrefetch sweeps the prefetch distance (lookups ahead; 0: none)
// of both kernels at one thread, every variant once per iteration in
// rotating order, on the same tables as BenchmarkGoVsC:
//
//	go test -run '^$' -bench Prefetch -benchtime 50x ./bench/cgather/
func BenchmarkPrefetch(b *testing.B) {
	defaultsOnce.Do(func() { defaults = newSetup(b, 8, 1<<20, 128, 2048, 20) })
	s := defaults
	type variant struct {
		name string
		run  func()
	}
	var vs []variant
	for _, pf := range []int{0, 8, 12, 16} {
		k := goKernel(b, map[string]any{"workers": 1, "prefetch": pf})
		req := &kernel.GatherReduceRequest{Tables: s.tables, Bags: s.bags, Out: s.out}
		vs = append(vs, variant{fmt.Sprintf("go-pf%d", pf), func() {
			if _, err := k.GatherReduce(context.Background(), req); err != nil {
				b.Fatal(err)
			}
		}})
		vs = append(vs, variant{fmt.Sprintf("c-pf%d", pf), func() { s.job.Threads = 1; s.job.Prefetch = pf; s.job.Run() }})
	}
	times := make([][]float64, len(vs))
	for i := 0; b.Loop(); i++ {
		for j := range vs {
			v := (i + j) % len(vs)
			start := time.Now()
			vs[v].run()
			times[v] = append(times[v], time.Since(start).Seconds())
		}
	}
	for j, v := range vs {
		b.ReportMetric(float64(s.bytes)/median(times[j])/1e9, v.name+"-GB/s")
	}
}
