package bench

import (
	"fmt"
	"io"
	"strings"

	"github.com/flowrun/flowrun/framework/summary"
)

// WriteTable writes the side-by-side table of c: one row per run, modeled
// figures labelled modeled, then whether the digests agree.
func WriteTable(w io.Writer, c *Comparison) {
	swept := len(c.Sweep) > 0
	t := summary.Table{Align: "llrrrrrrrrl"}
	if !swept {
		t.Align = "lrrrrrrrrl"
	}
	header := []string{"graph"}
	if swept {
		header = append(header, "point")
	}
	modeledHead := "modeled ms/batch"
	if c.Warmup > 0 {
		modeledHead = fmt.Sprintf("modeled ms/batch (after %d)", c.Warmup)
	}
	header = append(header, "batches", "wall ms/batch", modeledHead, "speedup wall", "speedup modeled",
		"hit rate", "to device/batch", "to host/batch", "digest")
	acc := c.hasAccuracy()
	if acc {
		header = append(header, "accuracy", "acc drop")
		t.Align += "rr"
	}
	t.Row(header...)
	var errs []string
	for _, r := range c.Runs {
		cells := []string{r.Graph}
		if swept {
			cells = append(cells, strings.Join(r.Point, " "))
		}
		switch {
		case r.Error != "":
			cells = append(cells, "-", "failed", "-", "-", "-", "-", "-", "-", "-")
			errs = append(errs, fmt.Sprintf("%s %s: %s", r.File, strings.Join(r.Point, " "), firstLine(r.Error)))
		case r.FromShadows:
			cells = append(cells, r.shadowCells()...)
		default:
			cells = append(cells, r.cells(c.Warmup)...)
		}
		if acc {
			cells = append(cells, r.accuracyCells()...)
		}
		t.Row(cells...)
	}
	t.Write(w, "")
	fmt.Fprintln(w)
	if acc {
		fmt.Fprintf(w, "%-12s %s\n", "accuracy", "held-out, prediction ≥ 0.5 against the label; acc drop: (first graph's − this run's)/first graph's · 100 at the same point (mixed-precision paper, Eq. 1)")
	}
	writeFooter(w, c, errs)
}

// cells are a finished run's figures in the table's columns from
// batches on.
func (r *Run) cells(warmup int) []string {
	dash := func(ok bool, s string) string {
		if !ok {
			return "-"
		}
		return s
	}
	sw, sm := "-", "-"
	if s := r.Speedup; s != nil {
		sw = fmt.Sprintf("%.2f×", s.Wall)
		sm = dash(s.Modeled > 0, fmt.Sprintf("%.2f×", s.Modeled))
	}
	hit := "-"
	if r.HitRate != nil {
		hit = fmt.Sprintf("%.1f%%", 100**r.HitRate)
	}
	link := func(k string) string {
		v, ok := r.LinkBytesPerBatch[k]
		return dash(ok, summary.BytesIEC(int64(v)))
	}
	digest := r.Digest
	if len(digest) > 12 {
		digest = digest[:12]
	}
	return []string{fmt.Sprint(r.Batches),
		fmt.Sprintf("%.3f", r.IterationMs.Wall),
		dash(r.modeled(warmup) > 0, fmt.Sprintf("%.3f", r.modeled(warmup))),
		sw, sm, hit, link("to_device"), link("to_host"), digest}
}

// shadowCells are a shadow's figures in the table's columns from batches
// on: no time, speedup or digest of its own (the run served another
// policy), and "from shadows" where the digest goes.
func (r *Run) shadowCells() []string {
	cells := r.cells(0)
	for _, i := range []int{1, 2, 3, 4} {
		cells[i] = "-"
	}
	cells[len(cells)-1] = "from shadows"
	return cells
}

// writeSweptBy says how a --shadows sweep got its figures, and for a
// shadow sweep each point's misses and evictions.
func writeSweptBy(w io.Writer, c *Comparison) {
	if c.SweptBy == "" {
		return
	}
	line := "swept by " + c.SweptBy
	if c.SweptBy == SweptByShadows {
		line += ": each row's hit rate and bytes are a shadow policy's (results.shadows) on the ID stream of one run per graph; no time or digest of its own"
	}
	if c.SweepNote != "" {
		line += ", not shadows: " + c.SweepNote
	}
	fmt.Fprintf(w, "%-12s %s\n", "sweep", line)
	for _, r := range c.Runs {
		if s := r.Shadow; s != nil {
			fmt.Fprintf(w, "%-12s %s %s: %s misses, %s evictions (%s)\n", "shadow", r.Graph, strings.Join(r.Point, " "),
				summary.Thousands(float64(s.Misses)), summary.Thousands(float64(s.Evictions)), s.Plugin)
		}
	}
}

// writeFooter writes the lines under the table: the baseline and what
// each clock means, the digests' verdict, the failed runs and the wall
// time of them all.
func writeFooter(w io.Writer, c *Comparison, errs []string) {
	clockNote := "steady state of the modeled schedule"
	if c.Warmup > 0 {
		clockNote = fmt.Sprintf("steady state of the modeled schedule of the batches after the first %d", c.Warmup)
	}
	fmt.Fprintf(w, "%-12s %s (wall: measured here, whole run; modeled: the devices' cost models, %s)\n",
		"baseline", c.Baseline, clockNote)
	verdict := "every run at each point ends with the same model digest"
	runs := len(c.Runs)
	switch {
	case c.SweptBy == SweptByShadows:
		verdict = "none per point: shadows train nothing (the one run trains with the graph's own cache)"
		runs = len(c.Graphs)
	case !c.DigestsEqual:
		verdict = "DIFFER between runs at the same point"
	}
	fmt.Fprintf(w, "%-12s %s\n", "digests", verdict)
	fmt.Fprintf(w, "%-12s %s\n", "modeled", "a modeled speedup compares designs on the modeled hardware at these sizes; paper-scale figures: docs/benchmarks.md")
	writeProfileLimits(w, c)
	writeSweptBy(w, c)
	for _, e := range errs {
		fmt.Fprintf(w, "%-12s %s\n", "failed", e)
	}
	fmt.Fprintf(w, "%-12s %s for %d runs\n", "wall", summary.Ms(c.WallMs), runs)
}

// writeProfileLimits says which runs' caches held only what their warm-up
// profile saw: their hit rate cannot grow with the cache's size, and equal
// hit rates across a cache.size sweep are then the data, not a bug.
func writeProfileLimits(w io.Writer, c *Comparison) {
	for _, r := range c.Runs {
		if r.Results == nil {
			continue
		}
		rows, limited := r.Results.Cache.ProfileLimit()
		if !limited {
			continue
		}
		fmt.Fprintf(w, "%-12s %s %s: the cache's warm-up profile saw at most %s distinct rows per table, fewer than its %s; it holds only those, so a larger cache hits no more (the data, not a bug: profile more batches)\n",
			"profile", r.Graph, strings.Join(r.Point, " "), summary.Thousands(float64(rows)), summary.Thousands(float64(r.Results.Cache.Rows)))
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// accuracyCells are a run's held-out accuracy and its relative drop
// against the first graph (Eq. 1, in %), "-" where it has none.
func (r *Run) accuracyCells() []string {
	a, d := "-", "-"
	if r.Accuracy != nil {
		a = fmt.Sprintf("%.4f", *r.Accuracy)
	}
	if r.AccuracyDropPct != nil {
		d = fmt.Sprintf("%+.3f%%", *r.AccuracyDropPct)
	}
	return []string{a, d}
}
