package summary

import (
	"fmt"
	"io"
	"strings"

	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/serving"
)

// writeServing writes serving under load, one line per clock, each
// labelled with its clock: the load offered, the latency percentiles
// (or, under overload, why there are none), the achieved QPS and the
// share within the SLA; on the modeled clock the bottleneck and the
// capacity it allows.
func writeServing(w io.Writer, line lineFunc, s *results.Serving) {
	if s == nil {
		return
	}
	defer writeSweep(w, s.ModeledSweep)
	label := "serving"
	for _, rep := range []*serving.Report{s.Modeled, s.Measured} {
		if rep == nil {
			continue
		}
		line(label, "%s", servingLine(rep))
		label = ""
		if o := rep.Overload; o != nil {
			line("", "  OVERLOAD (%s): %s; queries in the system %s at mid-stream, %s at the end; the last query waited %s; no percentiles: no steady state",
				rep.Clock, o.Reason, Thousands(float64(o.QueueAtHalf)), Thousands(float64(o.QueueAtEnd)), Ms(o.LastLatencyMs))
		}
	}
}

// writeSweep writes the modeled replay at each rate of serving.sweep_qps:
// latency against QPS, one row per rate.
func writeSweep(w io.Writer, sweep []*serving.Report) {
	if len(sweep) == 0 {
		return
	}
	fmt.Fprint(w, "\nserving sweep (modeled; the same queries at each rate, common random numbers):\n  ")
	t := Table{Align: "rrrrrrrl"}
	t.Row("offered QPS", "achieved QPS", "p50", "p95", "p99", "within SLA", "bottleneck use", "")
	for _, rep := range sweep {
		row := []string{Thousands(rep.OfferedQPS), Thousands(rep.AchievedQPS), "-", "-", "-", "-",
			fmt.Sprintf("%.0f%%", 100*rep.Utilisation[rep.Bottleneck]), ""}
		if p := rep.LatencyMs; p != nil {
			row[2], row[3], row[4] = Ms(p.P50), Ms(p.P95), Ms(p.P99)
		}
		if rep.WithinSLA != nil {
			row[5] = fmt.Sprintf("%.1f%%", 100**rep.WithinSLA)
		}
		if rep.Overload != nil {
			row[7] = "OVERLOAD: no steady state"
		}
		t.Row(row...)
	}
	t.Write(w, "  ")
	fmt.Fprintln(w)
}

// servingLine is one clock's report on one line.
func servingLine(rep *serving.Report) string {
	parts := []string{fmt.Sprintf("%s: %s queries at %s QPS offered (%s)", rep.Clock, Thousands(float64(rep.Queries)), Thousands(rep.OfferedQPS), rep.Arrival)}
	if p := rep.LatencyMs; p != nil {
		parts = append(parts, fmt.Sprintf("latency p50 %s  p95 %s  p99 %s  mean %s", Ms(p.P50), Ms(p.P95), Ms(p.P99), Ms(p.Mean)))
	}
	parts = append(parts, fmt.Sprintf("achieved %s QPS", Thousands(rep.AchievedQPS)))
	if rep.WithinSLA != nil {
		parts = append(parts, fmt.Sprintf("%.1f%% within %s", 100**rep.WithinSLA, Ms(rep.SLAMs)))
	}
	if rep.Bottleneck != "" {
		parts = append(parts, fmt.Sprintf("bottleneck %s at %.0f%% of %d server(s), capacity %s QPS",
			rep.Bottleneck, 100*rep.Utilisation[rep.Bottleneck], rep.Servers[rep.Bottleneck], Thousands(rep.CapacityQPS)))
	}
	return strings.Join(parts, "; ")
}
