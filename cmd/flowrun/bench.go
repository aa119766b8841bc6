package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/flowrun/flowrun/framework/stages/cast"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

func newBenchCmd() *cobra.Command {
	// bench GRAPH... compares graphs (bench_graphs.go); its subcommands
	// measure single plugins.
	cmd := newBenchCmdGraphs()
	cmd.AddCommand(newBenchKernelCmd())
	return cmd
}

// kernelBench is the configuration of `flowrun bench kernel`.
type kernelBench struct {
	Op        string  `json:"op"`
	Plugin    string  `json:"plugin"`
	Options   string  `json:"options,omitempty"`
	Tables    int     `json:"tables"`
	Rows      int64   `json:"rows"`
	Dim       int     `json:"dim"`
	Batch     int     `json:"batch"`
	Lookups   int     `json:"lookups"`
	Dist      string  `json:"dist"`
	ZipfS     float64 `json:"zipf_s,omitempty"`
	Threads   int     `json:"threads"`
	Reduce    string  `json:"reduce"`
	Optimizer string  `json:"optimizer,omitempty"`
	Reps      int     `json:"reps"`
	Warmup    int     `json:"warmup"`
	Seed      uint64  `json:"seed"`
	HugePages bool    `json:"huge_pages"`
}

// kernelBenchResult is what `flowrun bench kernel --json` prints.
type kernelBenchResult struct {
	kernelBench
	Stride int `json:"stride"`
	// RowBytes is the useful row bytes of one call, lookups × dim × 4:
	// the rows a gather-reduce reads, or the expanded gradient rows that
	// expand-coalesce and scatter sum.
	RowBytes int64 `json:"row_bytes"`
	// Seconds is the median wall time of one call over the repetitions,
	// GBps = RowBytes / Seconds / 1e9.
	Seconds    float64 `json:"seconds"`
	SecondsMin float64 `json:"seconds_min"`
	SecondsMax float64 `json:"seconds_max"`
	GBps       float64 `json:"gbps"`
	// CPUSeconds is the median process CPU time of one call; GBpsCPU is
	// RowBytes over CPUSeconds/Threads, a figure that load from other
	// processes barely moves (a preempted thread's CPU clock stops), for
	// comparing on a shared machine.
	CPUSeconds float64 `json:"cpu_seconds"`
	GBpsCPU    float64 `json:"gbps_cpu"`
	// UniqueRows is the rows expand-coalesce found, summed over tables
	// (expand-coalesce only; scatter does not report it).
	UniqueRows int64 `json:"unique_rows,omitempty"`
	// CastSeconds is the wall time of casting (Alg. 2, the Go sort in
	// framework/stages/cast) for cast-gather-reduce, once, untimed by the
	// repetitions: the cast stage hides it beside the forward pass.
	CastSeconds float64 `json:"cast_seconds,omitempty"`
	// BytesRead and BytesWritten are what the kernel says one call
	// touched (kernel.Result); TrafficGBps is their sum over Seconds.
	BytesRead    int64   `json:"bytes_read"`
	BytesWritten int64   `json:"bytes_written"`
	TrafficGBps  float64 `json:"traffic_gbps"`
	// TableBytes is the size of all tables; HugePageBytes how much of it
	// the kernel backs with huge pages (-1: unknown).
	TableBytes    int64  `json:"table_bytes"`
	HugePageBytes int64  `json:"huge_page_bytes"`
	Impl          string `json:"impl,omitempty"`
	GoMaxProcs    int    `json:"gomaxprocs"`
}

func newBenchKernelCmd() *cobra.Command {
	cfg := kernelBench{}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "kernel",
		Short: "Measure a kernel operator on tables in shared-memory regions",
		Long: `Measure one kernel operator through the kernel plugin interface, on tables
allocated in shared-memory regions (with huge-page advice) and indices drawn
uniformly or from a Zipf distribution. After warm-up calls it times each
repetition and reports the median.

gbps is useful row bytes (lookups × dim × 4) per second: rows gathered for
gather-reduce, expanded gradient rows summed for expand-coalesce and
scatter. traffic_gbps is every byte the kernel says it touched.

  flowrun bench kernel --op gather-reduce --threads 2 --json
  flowrun bench kernel --op scatter --optimizer rowwise_adagrad --dist zipf
  flowrun bench kernel --options '{"impl":"go"}'      # the pure-Go loops`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cfg.validate(); err != nil {
				return usageError{err}
			}
			res, err := runKernelBench(cmd.Context(), cfg, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
			}
			return printKernelBench(cmd.OutOrStdout(), res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Op, "op", kernel.OpGatherReduce, "operator: gather-reduce, expand-coalesce, cast-gather-reduce or scatter")
	f.StringVar(&cfg.Plugin, "plugin", "builtin:cpu", "kernel plugin: builtin:NAME or the path of a plugin binary")
	f.StringVar(&cfg.Options, "options", "", "the kernel's options as a JSON object (--threads sets workers)")
	f.IntVar(&cfg.Tables, "tables", 8, "embedding tables")
	f.Int64Var(&cfg.Rows, "rows", 1<<20, "rows per table")
	f.IntVar(&cfg.Dim, "dim", 128, "floats per row")
	f.IntVar(&cfg.Batch, "batch", 2048, "bags per table per call")
	f.IntVar(&cfg.Lookups, "lookups", 20, "lookups per bag")
	f.StringVar(&cfg.Dist, "dist", "uniform", "row distribution: uniform or zipf")
	f.Float64Var(&cfg.ZipfS, "zipf-s", 1.05, "Zipf exponent s (> 1) for --dist zipf")
	f.IntVar(&cfg.Threads, "threads", 1, "kernel worker threads (the kernel's workers option; tables are split across them)")
	f.StringVar(&cfg.Reduce, "reduce", "sum", "pooling: sum or mean")
	f.StringVar(&cfg.Optimizer, "optimizer", "sgd", "scatter's optimizer: sgd, adagrad or rowwise_adagrad")
	f.IntVar(&cfg.Reps, "reps", 10, "timed repetitions")
	f.IntVar(&cfg.Warmup, "warmup", 2, "untimed calls first")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the rows and indices")
	f.BoolVar(&cfg.HugePages, "huge-pages", true, "advise huge pages for the tables (MADV_HUGEPAGE)")
	f.BoolVar(&asJSON, "json", false, "print the result as one JSON object")
	return cmd
}

func (c *kernelBench) validate() error {
	var errs []error
	switch c.Op {
	case kernel.OpGatherReduce, kernel.OpExpandCoalesce, kernel.OpScatter, opCastGatherReduce:
	default:
		errs = append(errs, fmt.Errorf("--op: want %s, %s, %s or %s, got %q", kernel.OpGatherReduce, kernel.OpExpandCoalesce, opCastGatherReduce, kernel.OpScatter, c.Op))
	}
	if c.Tables < 1 || c.Rows < 1 || c.Dim < 1 || c.Batch < 1 || c.Lookups < 0 {
		errs = append(errs, fmt.Errorf("--tables, --rows, --dim and --batch must be ≥ 1 and --lookups ≥ 0"))
	}
	if c.Dist != "uniform" && c.Dist != "zipf" {
		errs = append(errs, fmt.Errorf("--dist: want uniform or zipf, got %q", c.Dist))
	}
	if c.Dist == "zipf" && !(c.ZipfS > 1) {
		errs = append(errs, fmt.Errorf("--zipf-s must be > 1, got %v", c.ZipfS))
	}
	if c.Dist != "zipf" {
		c.ZipfS = 0
	}
	if c.Threads < 1 || c.Reps < 1 || c.Warmup < 0 {
		errs = append(errs, fmt.Errorf("--threads and --reps must be ≥ 1, --warmup ≥ 0"))
	}
	if _, err := kernel.ParseReduce(c.Reduce); err != nil {
		errs = append(errs, fmt.Errorf("--reduce: %w", err))
	}
	if _, err := kernel.ParseOptimizer(c.Optimizer); err != nil {
		errs = append(errs, fmt.Errorf("--optimizer: %w", err))
	}
	if c.Op != kernel.OpScatter {
		c.Optimizer = ""
	}
	if c.Options != "" {
		var m map[string]any
		if err := json.Unmarshal([]byte(c.Options), &m); err != nil {
			errs = append(errs, fmt.Errorf("--options: not a JSON object: %w", err))
		}
	}
	return errors.Join(errs...)
}

// kernelOptions merges --threads (as workers) into --options.
func (c kernelBench) kernelOptions() (json.RawMessage, error) {
	m := map[string]any{}
	if c.Options != "" {
		if err := json.Unmarshal([]byte(c.Options), &m); err != nil {
			return nil, err
		}
	}
	m["workers"] = c.Threads
	return json.Marshal(m)
}

// benchSetup is the regions of one benchmark, released by close.
type benchSetup struct {
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
}

// opCastGatherReduce benchmarks Tensor Casting's Alg. 3, the casted
// gradient gather-reduce, on the kernel's GatherReduce: the bag gradients
// are the table and the casted pairs (Alg. 2, computed once before timing,
// as the cast stage does beside the forward pass) are the bags. Its output
// is expand-coalesce's, bit for bit.
const opCastGatherReduce = "cast-gather-reduce"

func (s *benchSetup) close() {
	for _, r := range s.regions {
		r.Close()
	}
}

func (s *benchSetup) alloc(label string, size int64) (*region.Region, error) {
	r, err := region.Create("bench-"+label, max(size, 8))
	if err != nil {
		return nil, err
	}
	s.regions = append(s.regions, r)
	return r, nil
}

func runKernelBench(ctx context.Context, c kernelBench, stderr io.Writer) (*kernelBenchResult, error) {
	opt, _ := kernel.ParseOptimizer(c.Optimizer)
	stride := c.Dim
	if c.Op == kernel.OpScatter {
		stride += kernel.StateFloats(opt, c.Dim)
	}
	res := &kernelBenchResult{kernelBench: c, Stride: stride, GoMaxProcs: runtime.GOMAXPROCS(0)}
	res.RowBytes = int64(c.Tables) * int64(c.Batch) * int64(c.Lookups) * int64(c.Dim) * 4
	res.TableBytes = int64(c.Tables) * c.Rows * int64(stride) * 4

	s := &benchSetup{}
	defer s.close()
	if err := s.build(c, stride); err != nil {
		return nil, err
	}
	res.HugePageBytes = hugePageBytes(s.regions[:c.Tables])
	res.CastSeconds = s.castSecs

	host, err := newHost(nil, stderr)
	if err != nil {
		return nil, err
	}
	defer host.Close()
	k, err := host.Kernel(ctx, c.Plugin)
	if err != nil {
		return nil, err
	}
	opts, err := c.kernelOptions()
	if err != nil {
		return nil, err
	}
	shapes := make([]plugin.Table, c.Tables)
	for t := range shapes {
		shapes[t] = plugin.Table{Rows: c.Rows, Dim: c.Dim}
	}
	setup := plugin.Setup{RunID: "bench", Seed: c.Seed, Tables: shapes, BatchSize: c.Batch, Lookups: c.Lookups, Options: opts}
	if err := k.Configure(ctx, setup); err != nil {
		return nil, fmt.Errorf("configure %s: %w", c.Plugin, err)
	}
	if info, err := k.Info(ctx); err == nil && info.Name == "cpu" {
		res.Impl = cpuImpl(c.Options)
	}

	reduce, err := kernel.ParseReduce(c.Reduce)
	if err != nil {
		return nil, err
	}
	call := func() (*kernel.Result, []int64, error) {
		switch c.Op {
		case kernel.OpGatherReduce:
			r, err := k.GatherReduce(ctx, &kernel.GatherReduceRequest{Tables: s.tables, Bags: s.bags, Reduce: reduce, Out: s.grads})
			return r, nil, err
		case opCastGatherReduce:
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
	for range c.Warmup {
		if _, _, err := call(); err != nil {
			return nil, fmt.Errorf("%s: %w", c.Op, err)
		}
	}
	secs, cpus := make([]float64, c.Reps), make([]float64, c.Reps)
	for i := range secs {
		runtime.GC() // not during the timed call
		cpu0 := cpuSeconds()
		start := time.Now()
		r, counts, err := call()
		secs[i] = time.Since(start).Seconds()
		cpus[i] = cpuSeconds() - cpu0
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Op, err)
		}
		res.BytesRead, res.BytesWritten = r.BytesRead, r.BytesWritten
		res.UniqueRows = 0
		for _, n := range counts {
			res.UniqueRows += n
		}
	}
	slices.Sort(secs)
	res.Seconds, res.SecondsMin, res.SecondsMax = median(secs), secs[0], secs[len(secs)-1]
	res.GBps = float64(res.RowBytes) / res.Seconds / 1e9
	slices.Sort(cpus)
	if res.CPUSeconds = median(cpus); res.CPUSeconds > 0 {
		res.GBpsCPU = float64(res.RowBytes) / (res.CPUSeconds / float64(c.Threads)) / 1e9
	}
	res.TrafficGBps = float64(res.BytesRead+res.BytesWritten) / res.Seconds / 1e9
	return res, nil
}

// cpuImpl is the loop implementation the builtin cpu kernel runs with
// options.
func cpuImpl(options string) string {
	var o struct {
		Impl string `json:"impl"`
	}
	json.Unmarshal([]byte(options), &o)
	if o.Impl == "" {
		return "auto"
	}
	return o.Impl
}

// cpuSeconds is the CPU time this process has used, user and system.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// build allocates and fills the tables (one region each, huge-page advice
// before the first write), the bags and the gradient or output arrays.
func (s *benchSetup) build(c kernelBench, stride int) error {
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

	// Bags: every bag has Lookups rows; table t's indices start at
	// t·Batch·Lookups.
	per := int64(c.Batch) * int64(c.Lookups)
	ir, err := s.alloc("indices", 8*int64(c.Tables)*per)
	if err != nil {
		return err
	}
	or, err := s.alloc("offsets", 8*int64(c.Tables)*int64(c.Batch+1))
	if err != nil {
		return err
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

	// Gradients (or gather-reduce's output): float32 [table][bag][dim].
	gr, err := s.alloc("grads", 4*int64(c.Tables)*int64(c.Batch)*int64(c.Dim))
	if err != nil {
		return err
	}
	fillFloats(region.Float32s(gr.Bytes()), c.Seed^0x5eed, 1)
	s.grads = gr.Ref().Sub(0, 4*int64(c.Tables)*int64(c.Batch)*int64(c.Dim))

	if c.Op == opCastGatherReduce {
		return s.buildCast(c, indices, gr.Ref())
	}
	if c.Op == kernel.OpExpandCoalesce {
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
	}
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

func printKernelBench(w io.Writer, r *kernelBenchResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "op\t%s (%s", r.Op, r.Plugin)
	if r.Impl != "" {
		fmt.Fprintf(tw, ", impl %s", r.Impl)
	}
	fmt.Fprintf(tw, ", %d threads)\n", r.Threads)
	fmt.Fprintf(tw, "sizes\t%d tables × %d rows × %d floats (stride %d), batch %d × %d lookups, %s\n",
		r.Tables, r.Rows, r.Dim, r.Stride, r.Batch, r.Lookups, r.Dist)
	hp := "unknown"
	if r.HugePageBytes >= 0 {
		hp = fmt.Sprintf("%.1f%% of %.2f GiB in huge pages", 100*float64(r.HugePageBytes)/float64(r.TableBytes), float64(r.TableBytes)/(1<<30))
	}
	fmt.Fprintf(tw, "tables\t%s (advice %v)\n", hp, r.HugePages)
	fmt.Fprintf(tw, "time\tmedian %.3f ms (min %.3f, max %.3f) over %d reps\n", 1e3*r.Seconds, 1e3*r.SecondsMin, 1e3*r.SecondsMax, r.Reps)
	fmt.Fprintf(tw, "row bytes\t%.1f MB per call → %.2f GB/s (%.2f GB/s over CPU time per thread)\n", float64(r.RowBytes)/1e6, r.GBps, r.GBpsCPU)
	fmt.Fprintf(tw, "traffic\t%.1f MB read, %.1f MB written → %.2f GB/s\n", float64(r.BytesRead)/1e6, float64(r.BytesWritten)/1e6, r.TrafficGBps)
	if r.UniqueRows > 0 {
		fmt.Fprintf(tw, "unique rows\t%d of %d lookups\n", r.UniqueRows, int64(r.Tables)*int64(r.Batch)*int64(r.Lookups))
	}
	if r.CastSeconds > 0 {
		fmt.Fprintf(tw, "casting\t%.3f ms once before the reps (Alg. 2, hidden beside the forward pass by the cast stage)\n", 1e3*r.CastSeconds)
	}
	return tw.Flush()
}

// buildCast casts each table's lookups (every bag has Lookups rows) and
// lays the casted index out as bags over the gradient matrix: bag u of
// table t holds the batch bags whose gradients sum into unique row u.
// Bags is padded to the largest unique count with empty bags.
func (s *benchSetup) buildCast(c kernelBench, indices []int64, grads region.Ref) error {
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
