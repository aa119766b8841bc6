//go:build cgo && amd64

package cgather

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/flowrun/flowrun/plugins/kernels/cpu"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// setup is a batch in regions, for both kernels.
type setup struct {
	regions []*region.Region
	tables  []kernel.Table
	bags    kernel.Bags
	out     region.Ref
	job     *Job
	outs    [][]float32 // C's output, per table
	goOut   []float32
	bytes   int64
}

func (s *setup) close() {
	s.job.Free()
	for _, r := range s.regions {
		r.Close()
	}
}

// newSetup lays out tables × rows × dim tables (huge pages advised) and
// batch bags of lookups uniform rows each, as `flowrun bench kernel` does.
func newSetup(tb testing.TB, tables int, rows int64, dim, batch, lookups int) *setup {
	tb.Helper()
	s := &setup{bytes: int64(tables) * int64(batch) * int64(lookups) * int64(dim) * 4}
	alloc := func(label string, size int64) *region.Region {
		r, err := region.Create("cgather-"+label, size)
		if err != nil {
			tb.Fatal(err)
		}
		s.regions = append(s.regions, r)
		return r
	}
	per := int64(batch) * int64(lookups)
	ir, or := alloc("indices", 8*int64(tables)*per), alloc("offsets", 8*int64(tables)*int64(batch+1))
	gr, cr := alloc("out", 4*int64(tables)*int64(batch)*int64(dim)), alloc("cout", 4*int64(tables)*int64(batch)*int64(dim))
	s.bags = kernel.Bags{Batch: batch, Indices: ir.Ref(), Offsets: or.Ref()}
	s.out = gr.Ref()
	s.goOut = region.Float32s(gr.Bytes())
	indices, offsets, cout := region.Int64s(ir.Bytes()), region.Int64s(or.Bytes()), region.Float32s(cr.Bytes())
	var data [][]float32
	var ix, off [][]int64
	var wg sync.WaitGroup
	for t := range tables {
		r := alloc(fmt.Sprintf("table%d", t), 4*rows*int64(dim))
		if err := r.AdviseHugePages(); err != nil {
			tb.Logf("huge pages: %v", err)
		}
		f := region.Float32s(r.Bytes())
		wg.Go(func() {
			x := uint64(t)*0x9e3779b97f4a7c15 + 1
			for i := range f {
				x ^= x << 13
				x ^= x >> 7
				x ^= x << 17
				f[i] = float32(int32(x>>32)) / (1 << 31)
			}
		})
		s.tables = append(s.tables, kernel.Table{Data: r.Ref(), Rows: rows, Dim: dim})
		s.bags.IndexStart = append(s.bags.IndexStart, int64(t)*per)
		rng := rand.New(rand.NewPCG(1, uint64(t)))
		tix := indices[int64(t)*per : int64(t+1)*per]
		for i := range tix {
			tix[i] = rng.Int64N(rows)
		}
		toff := offsets[t*(batch+1) : (t+1)*(batch+1)]
		for b := range toff {
			toff[b] = int64(b * lookups)
		}
		data, ix, off = append(data, f), append(ix, tix), append(off, toff)
		s.outs = append(s.outs, cout[t*batch*dim:(t+1)*batch*dim])
	}
	wg.Wait()
	job, err := NewJob(data, dim, ix, off, s.outs, batch, dim)
	if err != nil {
		tb.Fatal(err)
	}
	s.job = job
	return s
}

// goKernel is flowrun's CPU kernel configured with options.
func goKernel(tb testing.TB, options map[string]any) kernel.Kernel {
	k := cpu.New()
	opts, _ := json.Marshal(options)
	if err := k.Configure(context.Background(), plugin.Setup{Options: opts}); err != nil {
		tb.Fatal(err)
	}
	return k
}

// The C reference and flowrun's kernel compute the same bits: both sum
// each element from +0 in bag order.
func TestSameBits(t *testing.T) {
	s := newSetup(t, 3, 5000, 192, 64, 7)
	defer s.close()
	for _, threads := range []int{1, 2} {
		s.job.Threads = threads
		s.job.Run()
		if _, err := goKernel(t, map[string]any{"workers": threads}).GatherReduce(context.Background(), &kernel.GatherReduceRequest{Tables: s.tables, Bags: s.bags, Out: s.out}); err != nil {
			t.Fatal(err)
		}
		for tab := range s.outs {
			for i, c := range s.outs[tab] {
				if g := s.goOut[tab*len(s.outs[tab])+i]; math.Float32bits(g) != math.Float32bits(c) {
					t.Fatalf("threads %d table %d float %d: go %v, c %v", threads, tab, i, g, c)
				}
			}
		}
	}
}

var (
	defaultsOnce sync.Once
	defaults     *setup
)

// BenchmarkGoVsC times flowrun's gather-reduce (builtin cpu kernel, through
// the kernel interface) and the C reference alternately, call by call, on
// the same regions at `flowrun bench kernel`'s defaults (8 tables × 2²⁰
// rows × 128 floats, 2048 bags × 20 uniform lookups), and reports each
// one's median GB/s and go/c, the ratio of the medians:
//
//	go test -run '^$' -bench GoVsC -benchtime 40x ./bench/cgather/
func BenchmarkGoVsC(b *testing.B) {
	defaultsOnce.Do(func() { defaults = newSetup(b, 8, 1<<20, 128, 2048, 20) })
	s := defaults
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			k := goKernel(b, map[string]any{"workers": threads})
			s.job.Threads = threads
			req := &kernel.GatherReduceRequest{Tables: s.tables, Bags: s.bags, Out: s.out}
			var goT, cT []float64
			for i := 0; b.Loop(); i++ {
				runGo := func() {
					start := time.Now()
					if _, err := k.GatherReduce(context.Background(), req); err != nil {
						b.Fatal(err)
					}
					goT = append(goT, time.Since(start).Seconds())
				}
				runC := func() {
					start := time.Now()
					s.job.Run()
					cT = append(cT, time.Since(start).Seconds())
				}
				if i%2 == 0 {
					runGo()
					runC()
				} else {
					runC()
					runGo()
				}
			}
			g, c := median(goT), median(cT)
			b.ReportMetric(float64(s.bytes)/g/1e9, "go-GB/s")
			b.ReportMetric(float64(s.bytes)/c/1e9, "c-GB/s")
			b.ReportMetric(c/g, "go/c")
		})
	}
}

func median(x []float64) float64 {
	x = slices.Clone(x)
	slices.Sort(x)
	n := len(x)
	if n%2 == 1 {
		return x[n/2]
	}
	return (x[n/2-1] + x[n/2]) / 2
}
