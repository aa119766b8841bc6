package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/flowrun/flowrun/framework/bench"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/kernel/quant"
)

func newBenchCmd() *cobra.Command {
	// bench GRAPH... compares graphs (bench_graphs.go); its subcommands
	// measure single plugins.
	cmd := newBenchCmdGraphs()
	cmd.AddCommand(newBenchKernelCmd())
	return cmd
}

// kernelFlags are the flags of `flowrun bench kernel`: the bench's
// configuration, checked by validate.
type kernelFlags bench.KernelConfig

func newBenchKernelCmd() *cobra.Command {
	cfg := kernelFlags{}
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
			res, err := runKernelBench(cmd.Context(), bench.KernelConfig(cfg), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
			}
			return bench.WriteKernelTable(cmd.OutOrStdout(), res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Op, "op", kernel.OpGatherReduce, "operator: gather-reduce, expand-coalesce, cast-gather-reduce, scatter, quantize or dequantize")
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
	f.StringVar(&cfg.Precision, "precision", "int8", "quantize's and dequantize's table precision: fp16, int8, int4 or int2")
	f.StringVar(&cfg.Rounding, "rounding", "nearest", "quantize's rounding: nearest or stochastic")
	f.BoolVar(&asJSON, "json", false, "print the result as one JSON object")
	return cmd
}

// validate checks the flags and clears the ones the operator or the
// distribution does not use (they are not in the JSON then).
func (c *kernelFlags) validate() error {
	var errs []error
	switch c.Op {
	case kernel.OpGatherReduce, kernel.OpExpandCoalesce, kernel.OpScatter, bench.OpCastGatherReduce:
		c.Precision, c.Rounding = "", ""
	case kernel.OpQuantize, kernel.OpDequantize:
		if p, err := quant.ParsePrecision(c.Precision); err != nil || p == quant.FP32 {
			errs = append(errs, fmt.Errorf("--precision: want fp16, int8, int4 or int2, got %q", c.Precision))
		}
		if _, err := quant.ParseRounding(c.Rounding); err != nil {
			errs = append(errs, fmt.Errorf("--rounding: %w", err))
		}
	default:
		errs = append(errs, fmt.Errorf("--op: want %s, %s, %s, %s, %s or %s, got %q", kernel.OpGatherReduce, kernel.OpExpandCoalesce, bench.OpCastGatherReduce, kernel.OpScatter, kernel.OpQuantize, kernel.OpDequantize, c.Op))
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

// runKernelBench opens the kernel plugin c names on a host of its own and
// times c.Op on it.
func runKernelBench(ctx context.Context, c bench.KernelConfig, stderr io.Writer) (*bench.KernelResult, error) {
	host, err := newHost(nil, stderr, false)
	if err != nil {
		return nil, err
	}
	defer host.Close()
	k, err := host.Kernel(ctx, c.Plugin)
	if err != nil {
		return nil, err
	}
	return bench.RunKernel(ctx, k, c)
}
