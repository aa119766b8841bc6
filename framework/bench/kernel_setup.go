package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flowrun/flowrun/framework/stages/cast"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/region"
)

// kernelSetup is the regions of one kernel benchmark, released by close.
type kernelSetup struct {
	regions []*region.Region
	tables  []kernel.Table
	bags    kernel.Bags
	grads   region.Ref // gradients (expand-coalesce, scatter) or the pooled output (gather-reduce)
	out     kernel.Coalesced
	// cast-gather-reduce: the gradient matrix as tables, the casted
	// index as bags, the coalesced gradients, and what casting took.
	castTables []kernel.Table
	castBags   kernel.Bags
	castOut    region.Ref
	castCounts []int64
	castSecs   float64
	// quantize, dequantize: the low-precision tables and the request.
	lowTables []*region.Region
	convert   *kernel.ConvertRequest
}

func (s *kernelSetup) close() {
	for _, r := range s.regions {
		r.Close()
	}
}

func (s *kernelSetup) alloc(label string, size int64) (*region.Region, error) {
	r, err := region.Create("bench-"+label, max(size, 8))
	if err != nil {
		return nil, err
	}
	s.regions = append(s.regions, r)
	return r, nil
}

// call makes one call of op on k over the setup's regions; it returns the
// kernel's result and the unique rows per table where the op finds them.
func (s *kernelSetup) call(ctx context.Context, k kernel.Kernel, op string, reduce kernel.Reduce, opt kernel.Optimizer) (*kernel.Result, []int64, error) {
	switch op {
	case kernel.OpQuantize, kernel.OpDequantize:
		r, err := s.callConvert(ctx, k, op)
		return r, nil, err
	case kernel.OpGatherReduce:
		r, err := k.GatherReduce(ctx, &kernel.GatherReduceRequest{Tables: s.tables, Bags: s.bags, Reduce: reduce, Out: s.grads})
		return r, nil, err
	case OpCastGatherReduce:
		r, err := k.GatherReduce(ctx, &kernel.GatherReduceRequest{Tables: s.castTables, Bags: s.castBags, Reduce: kernel.Sum, Out: s.castOut})
		return r, s.castCounts, err
	case kernel.OpExpandCoalesce:
		r, err := k.ExpandCoalesce(ctx, &kernel.ExpandCoalesceRequest{Tables: s.tables, Bags: s.bags, Reduce: reduce, Grads: s.grads, Out: s.out})
		if err != nil {
			return nil, nil, err
		}
		return &r.Result, r.Counts, nil
	default:
		r, err := k.Scatter(ctx, &kernel.ScatterRequest{
			Tables: s.tables, Bags: s.bags, Reduce: reduce, Grads: s.grads,
			Optimizer: opt, LearningRate: 1e-3, Epsilon: 1e-8,
		})
		return r, nil, err
	}
}

// build allocates and fills the tables (one region each, huge-page advice
// before the first write), the bags and the gradient or output arrays.
func (s *kernelSetup) build(c KernelConfig, stride int) error {
	if convertOp(c.Op) {
		indices, err := s.buildBags(c)
		if err != nil {
			return err
		}
		return s.buildConvert(c, indices)
	}
	if err := s.buildTables(c, stride); err != nil {
		return err
	}
	indices, err := s.buildBags(c)
	if err != nil {
		return err
	}
	// Gradients (or gather-reduce's output): float32 [table][bag][dim].
	gr, err := s.alloc("grads", 4*int64(c.Tables)*int64(c.Batch)*int64(c.Dim))
	if err != nil {
		return err
	}
	fillFloats(region.Float32s(gr.Bytes()), c.Seed^0x5eed, 1)
	s.grads = gr.Ref().Sub(0, 4*int64(c.Tables)*int64(c.Batch)*int64(c.Dim))

	if c.Op == OpCastGatherReduce {
		return s.buildCast(c, indices, gr.Ref())
	}
	if c.Op == kernel.OpExpandCoalesce {
		return s.buildCoalesced(c)
	}
	return nil
}

// buildTables allocates one region per table and fills it, the tables in
// parallel.
func (s *kernelSetup) buildTables(c KernelConfig, stride int) error {
	tableBytes := c.Rows * int64(stride) * 4
	for t := range c.Tables {
		r, err := s.alloc(fmt.Sprintf("table%d", t), tableBytes)
		if err != nil {
			return err
		}
		if c.HugePages {
			if err := r.AdviseHugePages(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
				return err
			}
		}
		s.tables = append(s.tables, kernel.Table{Data: r.Ref(), Rows: c.Rows, Dim: c.Dim, Stride: stride})
	}
	var wg sync.WaitGroup
	for t := range c.Tables {
		wg.Go(func() { fillFloats(region.Float32s(s.regions[t].Bytes()), c.Seed+uint64(t), 1) })
	}
	wg.Wait()
	return nil
}

// buildBags draws the bags: every bag has Lookups rows; table t's indices
// start at t·Batch·Lookups. It returns the indices.
func (s *kernelSetup) buildBags(c KernelConfig) ([]int64, error) {
	per := int64(c.Batch) * int64(c.Lookups)
	ir, err := s.alloc("indices", 8*int64(c.Tables)*per)
	if err != nil {
		return nil, err
	}
	or, err := s.alloc("offsets", 8*int64(c.Tables)*int64(c.Batch+1))
	if err != nil {
		return nil, err
	}
	indices, offsets := region.Int64s(ir.Bytes()), region.Int64s(or.Bytes())
	s.bags = kernel.Bags{Batch: c.Batch, Indices: ir.Ref(), Offsets: or.Ref()}
	for t := range c.Tables {
		s.bags.IndexStart = append(s.bags.IndexStart, int64(t)*per)
		rng := rand.New(rand.NewPCG(c.Seed, 1000+uint64(t)))
		draw := func() int64 { return rng.Int64N(c.Rows) }
		if c.Dist == "zipf" {
			z := rand.NewZipf(rng, c.ZipfS, 1, uint64(c.Rows-1))
			// Scatter the ranks over the table, so that hot rows are not
			// neighbours (they would share pages and lines).
			draw = func() int64 { return int64(z.Uint64() * 0x9e3779b97f4a7c15 % uint64(c.Rows)) }
		}
		for i := range per {
			indices[int64(t)*per+i] = draw()
		}
		for b := range c.Batch + 1 {
			offsets[t*(c.Batch+1)+b] = int64(b) * int64(c.Lookups)
		}
	}
	return indices, nil
}

// buildCoalesced allocates expand-coalesce's output for the worst case:
// every lookup a unique row.
func (s *kernelSetup) buildCoalesced(c KernelConfig) error {
	per := int64(c.Batch) * int64(c.Lookups)
	capacity := make([]int64, c.Tables)
	for t := range capacity {
		capacity[t] = per
	}
	rowStart, gradStart, rowBytes, gradBytes := kernel.CoalescedLayout(s.tables, capacity)
	rr, err := s.alloc("coalesced-rows", rowBytes)
	if err != nil {
		return err
	}
	cg, err := s.alloc("coalesced-grads", gradBytes)
	if err != nil {
		return err
	}
	s.out = kernel.Coalesced{Rows: rr.Ref(), Grads: cg.Ref(), RowStart: rowStart, GradStart: gradStart}
	return nil
}

// buildCast casts each table's lookups (every bag has Lookups rows) and
// lays the casted index out as bags over the gradient matrix: bag u of
// table t holds the batch bags whose gradients sum into unique row u.
// Bags is padded to the largest unique count with empty bags.
func (s *kernelSetup) buildCast(c KernelConfig, indices []int64, grads region.Ref) error {
	per := int64(c.Batch) * int64(c.Lookups)
	n := int64(c.Tables) * per
	sr, err := s.alloc("cast-src", 8*n)
	if err != nil {
		return err
	}
	castSrc := region.Int64s(sr.Bytes())
	castDst, rows := make([]int64, n), make([]int64, n)
	dst := make([]int64, per)
	for i := range dst {
		dst[i] = int64(i) / int64(c.Lookups)
	}
	s.castCounts = make([]int64, c.Tables)
	start := time.Now()
	for t := range int64(c.Tables) {
		lo, hi := t*per, (t+1)*per
		s.castCounts[t] = int64(cast.Cast(indices[lo:hi], dst, castSrc[lo:hi], castDst[lo:hi], rows[lo:hi]))
	}
	s.castSecs = time.Since(start).Seconds()
	maxU := slices.Max(s.castCounts)
	or, err := s.alloc("cast-offsets", 8*int64(c.Tables)*(maxU+1))
	if err != nil {
		return err
	}
	coff := region.Int64s(or.Bytes())
	for t := range int64(c.Tables) {
		o := coff[t*(maxU+1) : (t+1)*(maxU+1)]
		u := int64(0)
		for j := range per {
			if j == 0 || castDst[t*per+j] != castDst[t*per+j-1] {
				o[u] = j
				u++
			}
		}
		for ; u <= maxU; u++ {
			o[u] = per
		}
	}
	s.castBags = kernel.Bags{Batch: int(maxU), Indices: sr.Ref(), Offsets: or.Ref(), IndexStart: s.bags.IndexStart}
	rowBytes := 4 * int64(c.Batch) * int64(c.Dim)
	for t := range int64(c.Tables) {
		s.castTables = append(s.castTables, kernel.Table{Data: grads.Sub(t*rowBytes, rowBytes), Rows: int64(c.Batch), Dim: c.Dim})
	}
	out, err := s.alloc("cast-coalesced", 4*int64(c.Tables)*maxU*int64(c.Dim))
	if err != nil {
		return err
	}
	s.castOut = out.Ref().Sub(0, 4*int64(c.Tables)*maxU*int64(c.Dim))
	return nil
}

// fillFloats fills f with values in [-scale, scale) from a fast generator
// seeded with seed (no denormals, no NaNs).
func fillFloats(f []float32, seed uint64, scale float32) {
	x := seed*0x9e3779b97f4a7c15 + 1
	for i := range f {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		f[i] = float32(int32(x>>32)) * (scale / (1 << 31))
	}
}

// hugePageBytes sums, from /proc/self/smaps, how many bytes of the
// regions' mappings are backed by huge pages; -1 when it cannot tell.
func hugePageBytes(regions []*region.Region) int64 {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return -1
	}
	defer f.Close()
	names := map[string]bool{}
	for _, r := range regions {
		names[r.Name()] = true
	}
	var total int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			in = false
			if len(fields) >= 6 {
				path := fields[len(fields)-1]
				in = names[path[strings.LastIndexByte(path, '/')+1:]]
			}
			continue
		}
		if in && len(fields) == 3 && fields[2] == "kB" {
			switch fields[0] {
			case "AnonHugePages:", "ShmemPmdMapped:", "FilePmdMapped:":
				var kb int64
				fmt.Sscan(fields[1], &kb)
				total += kb << 10
			}
		}
	}
	if sc.Err() != nil {
		return -1
	}
	return total
}
