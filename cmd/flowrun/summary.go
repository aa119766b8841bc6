package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/flowrun/flowrun/framework/results"
)

// printSummary writes the end-of-run table: per stage, batches and wall
// time percentiles (measured) beside modeled time, then the run's totals.
func printSummary(w io.Writer, r *results.Results) {
	fmt.Fprintf(w, "graph %s  run %s  seed %d  %d training + %d held-out batches in %.0f ms\n\n",
		r.Graph, r.RunID, r.Seed, r.Batches, r.EvalBatches, r.WallMs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\tkind\tbatches\twall p50 ms\twall p95 ms\twall p99 ms\tmodeled mean ms\t")
	for _, s := range r.Stages {
		modeled := "-"
		if s.ModeledMs != nil {
			modeled = fmt.Sprintf("%.3f", s.ModeledMs.Mean)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%.3f\t%.3f\t%s\t\n", s.Name, s.Kind, s.Batches, s.WallMs.P50, s.WallMs.P95, s.WallMs.P99, modeled)
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintf(w, "iteration  %.3f ms wall", r.IterationMs.Wall)
	if r.IterationMs.Modeled > 0 {
		fmt.Fprintf(w, ", %.3f ms modeled", r.IterationMs.Modeled)
		if c := r.ModeledClock; c != nil {
			fmt.Fprintf(w, " (%s schedule, bottleneck %s)", c.Mode, c.Bottleneck)
		}
	}
	fmt.Fprintf(w, "\nthroughput %.0f samples/s wall", r.Throughput.WallSamplesPerS)
	if r.Throughput.ModeledSamplesPerS > 0 {
		fmt.Fprintf(w, ", %.0f samples/s modeled", r.Throughput.ModeledSamplesPerS)
	}
	fmt.Fprintln(w)
	if c := r.Cache; c != nil {
		fmt.Fprintf(w, "cache      %s, %d rows/table: hit rate %.3f (%d hits, %d misses, %d evictions)\n",
			c.Plugin, c.Rows, c.HitRate, c.Hits, c.Misses, c.Evictions)
	}
	if l := r.Metrics.Loss; l != nil {
		fmt.Fprintf(w, "loss       %.4f → %.4f (mean of first/last tenth %.4f → %.4f)\n", l.First, l.Last, l.FirstTenthMean, l.LastTenthMean)
	}
	if r.Metrics.AUC != nil {
		fmt.Fprintf(w, "held-out   AUC %.4f", *r.Metrics.AUC)
		if r.Metrics.LogLoss != nil {
			fmt.Fprintf(w, "  logloss %.4f", *r.Metrics.LogLoss)
		}
		if r.Metrics.NE != nil {
			fmt.Fprintf(w, "  NE %.4f", *r.Metrics.NE)
		}
		fmt.Fprintf(w, "  (%d samples)\n", r.Metrics.EvalCount)
	}
	if r.Metrics.NDCG != nil {
		fmt.Fprintf(w, "ranking    NDCG@%.0f %.4f over %.0f queries\n", r.Metrics.Extra["ndcg_k"], *r.Metrics.NDCG, r.Metrics.Extra["ndcg_queries"])
	}
	fmt.Fprintf(w, "digest     %s\n", r.Digest)
}
