// Package summary writes what a run leaves behind for a terminal: the
// end-of-run summary of a results.Results (a table of the stages, then the
// run's totals one line each), the progress bar drawn while it runs, and
// the text layout other terminal tables share (Table, Ms, Thousands,
// BytesIEC).
//
// Every figure comes from the results, so the summary and results.json
// agree, and every modeled figure says "modeled" (DESIGN.md §2.2). It
// imports framework/results only: not the runtime, the graph, a stage or a
// plugin, and it names no stage kind; what kind of run it describes it
// reads from the results' data.
package summary

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/flowrun/flowrun/framework/results"
)

// Write writes the end-of-run summary of r: a table of the stages
// (measured wall time per batch beside modeled device time, and each
// stage's share of the modeled schedule), then the run's totals, one line
// each. Every modeled figure says "modeled"; everything else is measured.
func Write(w io.Writer, r *results.Results) {
	writeHead(w, r)
	writeStages(w, r)
	line := func(label, format string, args ...any) {
		fmt.Fprintf(w, "%-12s %s\n", label, fmt.Sprintf(format, args...))
	}
	writeClocks(line, r)
	writeModeled(line, r)
	writePrimitives(line, r)
	writeCache(line, r.Cache)
	writeDSF(line, r.Metrics.Extra)
	writeStaleness(line, r.Metrics.Extra)
	writeShadows(w, r)
	writeMetrics(line, r.Metrics)
	writeServing(w, line, r.Serving)
	writeMemory(w, line, r)
	if p := pluginsLine(r.Plugins); p != "" {
		line("plugins", "%s", p)
	}
	line("digest", "%s", r.Digest)
}

// lineFunc writes one labelled line of the totals.
type lineFunc func(label, format string, args ...any)

// writeHead names the run and says how many batches ran in what time.
func writeHead(w io.Writer, r *results.Results) {
	head := fmt.Sprintf("graph %s  run %s  seed %d", r.Graph, r.RunID, r.Seed)
	if r.File != "" {
		head += "  file " + r.File
	}
	fmt.Fprintln(w, head)
	fmt.Fprintf(w, "%s in %s wall\n", batchCounts(r), Ms(r.WallMs))
	if d := r.Dataset; d != nil {
		fmt.Fprintln(w, datasetLine(d))
	}
	fmt.Fprintln(w)
}

// datasetLine says how many passes the run made over its batch file, and
// says so loudly when the file's training part was repeated: a loss that
// falls on repeated batches is not a model learning.
func datasetLine(d *results.DatasetUse) string {
	s := fmt.Sprintf("data: %s holds %d training batches: %.2f epochs", d.Path, d.FileBatches, d.Epochs)
	if d.Epochs > 1 {
		s += " (the data repeats: every batch was trained on more than once)"
	}
	return s
}

// writeStages writes the stage table; its modeled columns only when some
// stage has a modeled figure.
func writeStages(w io.Writer, r *results.Results) {
	share := map[string]float64{}
	if c := r.ModeledClock; c != nil {
		for _, u := range c.Stages {
			share[u.Name] = u.Utilisation
		}
	}
	modeled := false
	for _, s := range r.Stages {
		modeled = modeled || s.ModeledMs != nil || share[s.Name] > 0
	}
	t := Table{Align: "llrrrrrr"}
	header := []string{"stage", "kind", "batches", "wall p50 ms", "wall p95 ms", "wall p99 ms"}
	if modeled {
		header = append(header, "modeled mean ms", "modeled share")
	}
	t.Row(header...)
	for _, s := range r.Stages {
		cells := []string{s.Name, s.Kind, fmt.Sprint(s.Batches),
			fmt.Sprintf("%.3f", s.WallMs.P50), fmt.Sprintf("%.3f", s.WallMs.P95), fmt.Sprintf("%.3f", s.WallMs.P99)}
		if modeled {
			mean, sh := "-", "-"
			if s.ModeledMs != nil {
				mean = fmt.Sprintf("%.3f", s.ModeledMs.Mean)
			}
			if u := share[s.Name]; u > 0 {
				sh = fmt.Sprintf("%.1f%%", 100*u)
			}
			cells = append(cells, mean, sh)
		}
		t.Row(cells...)
	}
	t.Write(w, "")
	fmt.Fprintln(w)
}

// writeClocks writes the iteration time and the throughput, wall beside
// modeled.
func writeClocks(line lineFunc, r *results.Results) {
	iter := fmt.Sprintf("%s/batch wall", Ms(r.IterationMs.Wall))
	if r.IterationMs.Modeled > 0 {
		iter += fmt.Sprintf("   %s/batch modeled", Ms(r.IterationMs.Modeled))
		if c := r.ModeledClock; c != nil {
			iter += " (" + schedule(c.Mode, c.Depth, c.Batches, float64(c.MakespanNs)/1e6, c.Bottleneck) + ")"
		}
	}
	line("iteration", "%s", iter)
	thr := fmt.Sprintf("%s samples/s wall", Thousands(r.Throughput.WallSamplesPerS))
	if r.Throughput.ModeledSamplesPerS > 0 {
		thr += fmt.Sprintf("   %s samples/s modeled", Thousands(r.Throughput.ModeledSamplesPerS))
	}
	line("throughput", "%s", thr)
}

// writeModeled names the hardware the modeled figures are of (each
// device's profile, not its plugin) and says what they mean, since a
// newcomer reads "modeled" beside "wall" as two measurements of one thing.
func writeModeled(line lineFunc, r *results.Results) {
	if r.IterationMs.Modeled <= 0 {
		return
	}
	var parts []string
	for _, p := range r.Plugins {
		if p.Profile != "" {
			parts = append(parts, fmt.Sprintf("%s = %s (%s)", strings.TrimPrefix(p.Role, "devices."), p.Profile, p.Ref))
		}
	}
	if len(parts) > 0 {
		line("modeled on", "%s", strings.Join(parts, "; "))
	}
	line("", "modeled: the time those devices would take for this run's work, by their cost models; wall: this machine, which does all the computing")
	line("", "a modeled comparison of two graphs compares their designs on that hardware at this run's size; paper-scale figures: docs/benchmarks.md")
}

// writePrimitives writes each stage's modeled time per primitive, largest
// first.
func writePrimitives(line lineFunc, r *results.Results) {
	label := "primitives"
	for _, p := range r.Primitives {
		if len(p.ModeledMs) == 0 || p.Batches == 0 {
			continue
		}
		parts := make([]string, 0, len(p.ModeledMs))
		for _, k := range sortedKeysBy(p.ModeledMs) {
			parts = append(parts, fmt.Sprintf("%s %.3f", k, p.ModeledMs[k]/float64(p.Batches)))
		}
		line(label, "%s, modeled ms/batch over its %d batches: %s", p.Stage, p.Batches, strings.Join(parts, ", "))
		label = ""
	}
}

// writeCache writes the cache's hit rate and the bytes it moved per link.
func writeCache(line lineFunc, c *results.Cache) {
	if c == nil {
		return
	}
	line("cache", "%s, %s rows/table: hit rate %.1f%% (%s hits, %s misses, %s evictions)",
		c.Plugin, Thousands(float64(c.Rows)), 100*c.HitRate,
		Thousands(float64(c.Hits)), Thousands(float64(c.Misses)), Thousands(float64(c.Evictions)))
	if c.DistinctHits+c.DistinctMisses > 0 {
		line("", "per distinct row of a batch: hit rate %.1f%% (%s hits, %s misses)",
			100*c.DistinctHitRate, Thousands(float64(c.DistinctHits)), Thousands(float64(c.DistinctMisses)))
	}
	if c.HotLookups > 0 {
		line("", "hot share %.1f%%: %s lookups of rows in the static hot part (never evicted)", 100*c.HotShare, Thousands(float64(c.HotLookups)))
	}
	if len(c.LinkBytes) > 0 {
		links := make([]string, 0, len(c.LinkBytes))
		for _, k := range slices.Sorted(maps.Keys(c.LinkBytes)) {
			links = append(links, fmt.Sprintf("%s %s", strings.ReplaceAll(k, "_", " "), BytesIEC(c.LinkBytes[k])))
		}
		line("", "moved %s", strings.Join(links, ", "))
	}
	if rows, limited := c.ProfileLimit(); limited {
		line("", "its warm-up profile saw at most %s distinct rows per table, fewer than its %s: it holds only those, so a larger cache hits no more (the data: profile longer batches)",
			Thousands(float64(rows)), Thousands(float64(c.Rows)))
	}
}

// writeDSF writes the share of lookups that are distinct rows of their
// batch (metrics.extra dsf_ratio, measured at load), with the range over
// the tables (dsf_ratio.tN) where there are several: what de-duplicating a
// batch's sparse features (HECA's DSF) leaves to move and update.
func writeDSF(line lineFunc, extra map[string]float64) {
	ratio, ok := extra[results.MetricDSFRatio]
	if !ok {
		return
	}
	lo, hi, tables := 0.0, 0.0, 0
	for k, v := range extra {
		if !strings.HasPrefix(k, results.MetricDSFRatio+".t") {
			continue
		}
		if tables == 0 || v < lo {
			lo = v
		}
		if tables == 0 || v > hi {
			hi = v
		}
		tables++
	}
	s := fmt.Sprintf("%.1f%% of lookups are distinct rows of their batch", 100*ratio)
	if tables > 1 {
		s += fmt.Sprintf(" (%d tables: %.1f%%–%.1f%%)", tables, 100*lo, 100*hi)
	}
	line("DSF ratio", "%s, measured at load", s)
}

// writeMetrics writes the training loss, the held-out metrics and the
// ranking quality, each where the run has it.
func writeMetrics(line lineFunc, m results.Metrics) {
	if l := m.Loss; l != nil {
		line("loss", "%.4f → %.4f (mean of first/last tenth %.4f → %.4f)", l.First, l.Last, l.FirstTenthMean, l.LastTenthMean)
	}
	if m.AUC != nil || m.LogLoss != nil || m.NE != nil {
		var parts []string
		if m.AUC != nil {
			parts = append(parts, fmt.Sprintf("AUC %.4f", *m.AUC))
		}
		if m.LogLoss != nil {
			parts = append(parts, fmt.Sprintf("logloss %.4f", *m.LogLoss))
		}
		if m.NE != nil {
			parts = append(parts, fmt.Sprintf("NE %.4f", *m.NE))
		}
		if m.Accuracy != nil {
			parts = append(parts, fmt.Sprintf("accuracy %.4f", *m.Accuracy))
		}
		line("held-out", "%s  (%s samples)", strings.Join(parts, "  "), Thousands(float64(m.EvalCount)))
	}
	if m.NDCG != nil {
		line("ranking", "NDCG@%.0f %.4f over %.0f queries", m.Extra["ndcg_k"], *m.NDCG, m.Extra["ndcg_queries"])
	}
}

// writeMemory writes the peak memory per holder as a table under its
// label, or the process's peak resident set where the run has no
// breakdown.
func writeMemory(w io.Writer, line lineFunc, r *results.Results) {
	if len(r.Memory) == 0 {
		if r.HostRSSPeakBytes > 0 {
			line("memory peak", "%s  host  flowrun process: peak resident set  measured", BytesIEC(r.HostRSSPeakBytes))
		}
		return
	}
	m := Table{Align: "rlll"}
	for _, h := range r.Memory {
		virtual := ""
		if h.VirtualBytes > 0 {
			virtual = "of " + BytesIEC(h.VirtualBytes)
		}
		what := h.Device + "  " + shortWhat(h.What)
		if h.Device != standInHost {
			// Held in this machine's memory in place of the device's.
			what += " (stand-in: in host memory)"
		}
		m.Row(BytesIEC(h.PeakBytes), what, virtual, h.Source)
	}
	fmt.Fprintf(w, "%-12s ", "memory peak")
	m.Write(w, strings.Repeat(" ", 13))
	if c := r.MemoryCompression; c != nil {
		line("compression", "host tables %s %s: %.4f of FP32 by Eq. 2–3, %.4f counted, %.4f measured (embedding values; optimizer state apart)",
			c.Precision, c.Storage, c.Eq3, c.Counted, c.Measured)
		if c.Eq2 > 0 {
			line("", "with the cache: %.4f of FP32 by Eq. 2 (%.2f×; the cache %s: FP32 rows, tags, counts as its policy declares)",
				c.Eq2, 1/c.Eq2, BytesIEC(c.CacheBytes))
		}
	}
}

// standInHost is the device results.Memory names for this machine's own
// memory; every other device's holders live in it as stand-ins.
const standInHost = "host"

// sortedKeysBy lists m's keys, largest value first (then by name).
func sortedKeysBy(m map[string]float64) []string {
	keys := slices.Sorted(maps.Keys(m))
	slices.SortStableFunc(keys, func(a, b string) int { return cmp.Compare(m[b], m[a]) })
	return keys
}

// Training reports whether r is a training run, from its data: training
// leaves a loss curve (one point per training batch) or held-out batches
// scored after it; an inference run has neither.
func Training(r *results.Results) bool {
	return r.Metrics.Loss != nil || r.EvalBatches > 0
}

// batchCounts says how many batches ran: training and held-out ones for a
// training run, batches (queries) for an inference run.
func batchCounts(r *results.Results) string {
	if !Training(r) {
		return fmt.Sprintf("%d batches", r.Batches)
	}
	s := fmt.Sprintf("%d training batches", r.Batches)
	if r.EvalBatches > 0 {
		s += fmt.Sprintf(" + %d held-out", r.EvalBatches)
	}
	return s
}

// schedule describes the modeled clock's schedule in a few words.
func schedule(mode string, depth, batches int, makespanMs float64, bottleneck string) string {
	s := mode + " schedule"
	if depth > 0 {
		s += fmt.Sprintf(", depth %d", depth)
	}
	s += fmt.Sprintf(", %d batches in %s", batches, Ms(makespanMs))
	if bottleneck != "" {
		s += ", bottleneck " + bottleneck
	}
	return s
}

// shortWhat keeps the name of a memory holder and drops the explanation in
// parentheses (results.json keeps it all).
func shortWhat(what string) string {
	if i := strings.Index(what, " ("); i > 0 {
		return what[:i]
	}
	return what
}

// pluginsLine names the run's plugins by role, out-of-process ones marked.
func pluginsLine(ps []results.PluginUse) string {
	if len(ps) == 0 {
		return ""
	}
	parts := make([]string, len(ps))
	remote := 0
	for i, p := range ps {
		parts[i] = p.Role + " " + p.Ref
		if p.Remote {
			parts[i] += "*"
			remote++
		}
	}
	switch remote {
	case 0:
		return strings.Join(parts, ", ") + " (all in process)"
	case len(ps):
		return strings.Join(parts, ", ") + " (all out of process)"
	}
	return strings.Join(parts, ", ") + " (*: out of process)"
}

// writeStaleness marks a run trained with bounded staleness (metrics.extra
// staleness, HECA Sec. 4.3) inexact, with the share of rows read stale.
func writeStaleness(line lineFunc, extra map[string]float64) {
	s, ok := extra[results.MetricStaleness]
	if !ok || s <= 0 {
		return
	}
	line("staleness", "%g: inexact, %.1f%% of the training batches' distinct rows were read %g update(s) old; compare its held-out AUC, NE and loss with the exact run (staleness 0)",
		s, 100*extra[results.MetricStaleShare], s)
}
