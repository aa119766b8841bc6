package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/flowrun/flowrun/framework/results"
)

// printSummary writes the end-of-run summary: a table of the stages
// (measured wall time per batch beside modeled device time, and each
// stage's share of the modeled schedule), then the run's totals, one line
// each. Every modeled figure says "modeled"; everything else is measured.
// Every figure comes from r, so the summary and results.json agree.
func printSummary(w io.Writer, r *results.Results) {
	head := fmt.Sprintf("graph %s  run %s  seed %d", r.Graph, r.RunID, r.Seed)
	if r.File != "" {
		head += "  file " + r.File
	}
	fmt.Fprintln(w, head)
	fmt.Fprintf(w, "%s in %s wall\n\n", batchCounts(r), ms(r.WallMs))

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
	t := table{align: "llrrrrrr"}
	header := []string{"stage", "kind", "batches", "wall p50 ms", "wall p95 ms", "wall p99 ms"}
	if modeled {
		header = append(header, "modeled mean ms", "modeled share")
	}
	t.row(header...)
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
		t.row(cells...)
	}
	t.write(w, "")
	fmt.Fprintln(w)

	line := func(label, format string, args ...any) {
		fmt.Fprintf(w, "%-12s %s\n", label, fmt.Sprintf(format, args...))
	}
	iter := fmt.Sprintf("%s/batch wall", ms(r.IterationMs.Wall))
	if r.IterationMs.Modeled > 0 {
		iter += fmt.Sprintf("   %s/batch modeled", ms(r.IterationMs.Modeled))
		if c := r.ModeledClock; c != nil {
			iter += " (" + schedule(c.Mode, c.Depth, c.Batches, float64(c.MakespanNs)/1e6, c.Bottleneck) + ")"
		}
	}
	line("iteration", "%s", iter)
	thr := fmt.Sprintf("%s samples/s wall", thousands(r.Throughput.WallSamplesPerS))
	if r.Throughput.ModeledSamplesPerS > 0 {
		thr += fmt.Sprintf("   %s samples/s modeled", thousands(r.Throughput.ModeledSamplesPerS))
	}
	line("throughput", "%s", thr)
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
	if c := r.Cache; c != nil {
		line("cache", "%s, %s rows/table: hit rate %.1f%% (%s hits, %s misses, %s evictions)",
			c.Plugin, thousands(float64(c.Rows)), 100*c.HitRate,
			thousands(float64(c.Hits)), thousands(float64(c.Misses)), thousands(float64(c.Evictions)))
		if len(c.LinkBytes) > 0 {
			links := make([]string, 0, len(c.LinkBytes))
			for _, k := range slices.Sorted(maps.Keys(c.LinkBytes)) {
				links = append(links, fmt.Sprintf("%s %s", strings.ReplaceAll(k, "_", " "), bytesIEC(c.LinkBytes[k])))
			}
			line("", "moved %s", strings.Join(links, ", "))
		}
	}
	if l := r.Metrics.Loss; l != nil {
		line("loss", "%.4f → %.4f (mean of first/last tenth %.4f → %.4f)", l.First, l.Last, l.FirstTenthMean, l.LastTenthMean)
	}
	if m := r.Metrics; m.AUC != nil || m.LogLoss != nil || m.NE != nil {
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
		line("held-out", "%s  (%s samples)", strings.Join(parts, "  "), thousands(float64(m.EvalCount)))
	}
	if r.Metrics.NDCG != nil {
		line("ranking", "NDCG@%.0f %.4f over %.0f queries", r.Metrics.Extra["ndcg_k"], *r.Metrics.NDCG, r.Metrics.Extra["ndcg_queries"])
	}
	if len(r.Memory) > 0 {
		m := table{align: "rlll"}
		for _, h := range r.Memory {
			virtual := ""
			if h.VirtualBytes > 0 {
				virtual = "of " + bytesIEC(h.VirtualBytes)
			}
			m.row(bytesIEC(h.PeakBytes), h.Device+"  "+shortWhat(h.What), virtual, h.Source)
		}
		fmt.Fprintf(w, "%-12s ", "memory peak")
		m.write(w, strings.Repeat(" ", 13))
	} else if r.HostRSSPeakBytes > 0 {
		line("memory peak", "%s  host  flowrun process: peak resident set  measured", bytesIEC(r.HostRSSPeakBytes))
	}
	if p := pluginsLine(r.Plugins); p != "" {
		line("plugins", "%s", p)
	}
	line("digest", "%s", r.Digest)
}

// sortedKeysBy lists m's keys, largest value first (then by name).
func sortedKeysBy(m map[string]float64) []string {
	keys := slices.Sorted(maps.Keys(m))
	slices.SortStableFunc(keys, func(a, b string) int { return cmp.Compare(m[b], m[a]) })
	return keys
}

// batchCounts says how many batches ran: training and held-out ones for a
// training graph, queries for an inference graph.
func batchCounts(r *results.Results) string {
	training := false
	for _, s := range r.Stages {
		if s.Kind == "train" {
			training = true
		}
	}
	if !training {
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
	s += fmt.Sprintf(", %d batches in %s", batches, ms(makespanMs))
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

// ms formats milliseconds with three significant decimals for small values.
func ms(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%s ms", thousands(v))
	case v >= 100:
		return fmt.Sprintf("%.1f ms", v)
	default:
		return fmt.Sprintf("%.3f ms", v)
	}
}

// thousands rounds v and groups its digits by three: 11457444 → 11,457,444.
func thousands(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprint(v)
	}
	s := fmt.Sprintf("%.0f", math.Abs(v))
	var b strings.Builder
	if v < 0 && s != "0" {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// bytesIEC formats a byte count in binary units: 61681664 → 58.8 MiB.
func bytesIEC(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), 0
	for v >= unit && i < 5 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[i-1])
}

// table lays out rows in columns two spaces apart; align has one letter
// per column, 'l' or 'r'. Unlike text/tabwriter it aligns text left and
// numbers right in the same table, and leaves no trailing blanks.
type table struct {
	align string
	rows  [][]string
}

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

// write prints the table; every line but the first starts with indent.
func (t *table) write(w io.Writer, indent string) {
	var width []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	for n, r := range t.rows {
		var b strings.Builder
		if n > 0 {
			b.WriteString(indent)
		}
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if i > 0 {
				b.WriteString("  ")
			}
			if i < len(t.align) && t.align[i] == 'r' {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}
