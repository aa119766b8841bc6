package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// KernelConfig is the configuration of `flowrun bench kernel`: one
// operator, the tables' and the batch's shape, and the repetitions.
type KernelConfig struct {
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
	// Precision and Rounding are quantize's and dequantize's (the tables'
	// precision: fp16, int8, int4, int2).
	Precision string `json:"precision,omitempty"`
	Rounding  string `json:"rounding,omitempty"`
}

// KernelResult is what `flowrun bench kernel --json` prints.
type KernelResult struct {
	KernelConfig
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
	TableBytes    int64 `json:"table_bytes"`
	HugePageBytes int64 `json:"huge_page_bytes"`
	// Impl is the kernel's ImplOption, where it declares one: the value
	// Options give it, else its default.
	Impl       string `json:"impl,omitempty"`
	GoMaxProcs int    `json:"gomaxprocs"`
	// StreamCopyGBps is, for quantize and dequantize, STREAM's copy
	// (a[i] = b[i]) on the same threads over arrays of as many bytes as
	// one call reads and writes (at least 256 MiB each, to outsize the
	// caches), timed in the same run, each repetition right after the
	// operator's (A and B alternated): the memory limit the operator is
	// held to. StreamRatio is TrafficGBps over it.
	StreamCopyGBps float64 `json:"stream_copy_gbps,omitempty"`
	StreamRatio    float64 `json:"stream_ratio,omitempty"`
}

// OpCastGatherReduce benchmarks Tensor Casting's Alg. 3, the casted
// gradient gather-reduce, on the kernel's GatherReduce: the bag gradients
// are the table and the casted pairs (Alg. 2, computed once before timing,
// as the cast stage does beside the forward pass) are the bags. Its output
// is expand-coalesce's, bit for bit.
const OpCastGatherReduce = "cast-gather-reduce"

// ImplOption is the option a kernel declares (plugin.Info.Config) to pick
// among implementations of its loops; RunKernel reports its value.
const ImplOption = "impl"

// RunKernel times c.Op on k: it allocates and fills the tables and the
// batch in shared-memory regions, configures k for them, makes c.Warmup
// untimed calls and then times c.Reps calls, reporting the median. c is
// taken as valid (the command checks its flags).
func RunKernel(ctx context.Context, k kernel.Kernel, c KernelConfig) (*KernelResult, error) {
	var opt kernel.Optimizer // only scatter applies one
	if c.Op == kernel.OpScatter {
		var err error
		if opt, err = kernel.ParseOptimizer(c.Optimizer); err != nil {
			return nil, err
		}
	}
	reduce, err := kernel.ParseReduce(c.Reduce)
	if err != nil {
		return nil, err
	}
	res := newKernelResult(c, opt)
	s := &kernelSetup{}
	defer s.close()
	if err := s.build(c, res.Stride); err != nil {
		return nil, err
	}
	if convertOp(c.Op) {
		res.HugePageBytes = hugePageBytes(s.lowTables)
		res.TableBytes = int64(c.Tables) * c.Rows * int64(s.convert.Tables[0].RowBytes())
	} else {
		res.HugePageBytes = hugePageBytes(s.regions[:c.Tables])
	}
	res.CastSeconds = s.castSecs
	if res.Impl, err = configureKernel(ctx, k, c); err != nil {
		return nil, err
	}
	call := func() (*kernel.Result, []int64, error) { return s.call(ctx, k, c.Op, reduce, opt) }
	if convertOp(c.Op) {
		return res, res.measureAgainstCopy(call)
	}
	if err := res.measure(call); err != nil {
		return nil, fmt.Errorf("%s: %w", c.Op, err)
	}
	return res, nil
}

// newKernelResult is the result's sizes, before anything runs. Scatter's
// rows hold the optimizer's state after the values.
func newKernelResult(c KernelConfig, opt kernel.Optimizer) *KernelResult {
	stride := c.Dim
	if c.Op == kernel.OpScatter {
		stride += kernel.StateFloats(opt, c.Dim)
	}
	res := &KernelResult{KernelConfig: c, Stride: stride, GoMaxProcs: runtime.GOMAXPROCS(0)}
	res.RowBytes = int64(c.Tables) * int64(c.Batch) * int64(c.Lookups) * int64(c.Dim) * 4
	res.TableBytes = int64(c.Tables) * c.Rows * int64(stride) * 4
	return res
}

// configureKernel configures k for c's tables, with c.Options and
// c.Threads as the kernel's workers, and returns its ImplOption.
func configureKernel(ctx context.Context, k kernel.Kernel, c KernelConfig) (string, error) {
	opts, err := c.kernelOptions()
	if err != nil {
		return "", err
	}
	shapes := make([]plugin.Table, c.Tables)
	for t := range shapes {
		shapes[t] = plugin.Table{Rows: c.Rows, Dim: c.Dim}
	}
	setup := plugin.Setup{RunID: "bench", Seed: c.Seed, Tables: shapes, BatchSize: c.Batch, Lookups: c.Lookups, Options: opts}
	if err := k.Configure(ctx, setup); err != nil {
		return "", fmt.Errorf("configure %s: %w", c.Plugin, err)
	}
	info, err := k.Info(ctx)
	if err != nil {
		return "", nil // Impl is a label; a kernel that cannot say goes without
	}
	return declaredOption(info, ImplOption, c.Options), nil
}

// kernelOptions merges --threads (as workers) into --options.
func (c KernelConfig) kernelOptions() (json.RawMessage, error) {
	m := map[string]any{}
	if c.Options != "" {
		if err := json.Unmarshal([]byte(c.Options), &m); err != nil {
			return nil, err
		}
	}
	m["workers"] = c.Threads
	return json.Marshal(m)
}

// declaredOption is the value options (a JSON object) give the option
// key, or its declared default when they give none; "" when the plugin
// declares no such option.
func declaredOption(info plugin.Info, key, options string) string {
	i := slices.IndexFunc(info.Config, func(f plugin.Field) bool { return f.Name == key })
	if i < 0 {
		return ""
	}
	var o map[string]any
	json.Unmarshal([]byte(options), &o)
	if v, ok := o[key].(string); ok && v != "" {
		return v
	}
	return info.Config[i].Default
}

// measure makes the warm-up calls, then times each repetition (wall and
// process CPU time) and takes the medians.
func (res *KernelResult) measure(call func() (*kernel.Result, []int64, error)) error {
	for range res.Warmup {
		if _, _, err := call(); err != nil {
			return err
		}
	}
	secs, cpus := make([]float64, res.Reps), make([]float64, res.Reps)
	for i := range secs {
		runtime.GC() // not during the timed call
		cpu0 := cpuSeconds()
		start := time.Now()
		r, counts, err := call()
		secs[i] = time.Since(start).Seconds()
		cpus[i] = cpuSeconds() - cpu0
		if err != nil {
			return err
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
		res.GBpsCPU = float64(res.RowBytes) / (res.CPUSeconds / float64(res.Threads)) / 1e9
	}
	res.TrafficGBps = float64(res.BytesRead+res.BytesWritten) / res.Seconds / 1e9
	return nil
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

// WriteKernelTable writes r for a terminal, one labelled line a figure.
func WriteKernelTable(w io.Writer, r *KernelResult) error {
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
	if r.StreamCopyGBps > 0 {
		fmt.Fprintf(tw, "precision\t%s, %s rounding\n", r.Precision, r.Rounding)
		fmt.Fprintf(tw, "STREAM copy\t%.2f GB/s on %d threads, same bytes, alternated → %s at %.2f× of the copy limit\n", r.StreamCopyGBps, r.Threads, r.Op, r.StreamRatio)
	}
	if r.CastSeconds > 0 {
		fmt.Fprintf(tw, "casting\t%.3f ms once before the reps (Alg. 2, hidden beside the forward pass by the cast stage)\n", 1e3*r.CastSeconds)
	}
	return tw.Flush()
}
