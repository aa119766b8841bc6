package search

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the search: every design's quality and p99 at each
// QPS (frontier points starred, overload said as such), the frontier at
// each QPS, and the best design per latency target. Latency is modeled
// and says so; quality is measured.
func WriteTable(w io.Writer, r *Result) {
	k := ""
	for _, d := range r.Designs {
		if d.NDCGK > 0 {
			k = fmt.Sprintf("@%d", d.NDCGK)
			break
		}
	}
	fmt.Fprintf(w, "design-space search: %d designs × %d QPS; quality NDCG%s of the served list (measured, real scoring), latency p99 in ms (modeled replay)\n\n",
		len(r.Designs), len(r.QPS), k)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"id", "NDCG" + k, "modeled ms/query"}
	for _, q := range r.QPS {
		head = append(head, fmt.Sprintf("p99 @%s QPS", formatQPS(q)))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t  design\t")
	for _, d := range r.Designs {
		fmt.Fprintln(tw, strings.Join(d.row(len(r.QPS)), "\t")+"\t  "+d.Name+"\t")
	}
	tw.Flush()
	fmt.Fprintln(w, "  * on the quality–p99 frontier at that QPS; overload: the QPS is at or above the bottleneck's capacity (no p99)")
	for _, d := range r.Designs {
		if d.Error != "" {
			fmt.Fprintf(w, "  %d %s: %s\n", d.ID, d.Name, d.Error)
		}
	}
	if r.Note != "" {
		fmt.Fprintf(w, "  note: %s\n", r.Note)
	}
	fmt.Fprintln(w)
	r.writeFrontiers(w)
	r.writeBest(w)
	r.writeFastest(w)
}

// row is the design's cells: id, quality, modeled time, p99 per QPS.
func (d Design) row(nQPS int) []string {
	cells := []string{fmt.Sprint(d.ID), "—", "—"}
	if d.NDCG != nil {
		cells[1] = fmt.Sprintf("%.4f", *d.NDCG)
	}
	if d.ModeledMsPerQuery > 0 {
		cells[2] = fmt.Sprintf("%.3f", d.ModeledMsPerQuery)
	}
	for i := 0; i < nQPS; i++ {
		cell := "—"
		if d.Error != "" {
			cell = "failed"
		} else if i < len(d.Serving) {
			cell = d.Serving[i].cell()
		}
		cells = append(cells, cell)
	}
	return cells
}

// cell is the latency's table cell.
func (l Latency) cell() string {
	switch {
	case l.Overload != "":
		return fmt.Sprintf("overload (%s at %.0f%%)", l.Bottleneck, 100*l.Utilisation)
	case l.P99Ms == nil:
		return "—"
	case l.Frontier:
		return fmt.Sprintf("%.3f *", *l.P99Ms)
	}
	return fmt.Sprintf("%.3f  ", *l.P99Ms)
}

// writeFrontiers prints the frontier at each QPS, lowest p99 first.
func (r *Result) writeFrontiers(w io.Writer) {
	fmt.Fprintln(w, "quality–p99 frontier (modeled p99; lowest latency first, each next design better in quality):")
	for _, f := range r.Frontiers {
		parts := make([]string, len(f.Designs))
		for i, id := range f.Designs {
			d := r.Designs[id]
			l := d.Serving[r.qpsIndex(f.QPS)]
			parts[i] = fmt.Sprintf("%d (NDCG %.4f, p99 %.3f ms)", id, *d.NDCG, *l.P99Ms)
		}
		line := strings.Join(parts, " → ")
		if len(parts) == 0 {
			line = "none: every design overloaded or failed"
		}
		fmt.Fprintf(w, "  @%s QPS: %s\n", formatQPS(f.QPS), line)
	}
}

// writeBest prints the best design per target at each QPS.
func (r *Result) writeBest(w io.Writer) {
	if len(r.TargetsMs) == 0 {
		return
	}
	fmt.Fprintln(w, "\nbest design per latency target (highest NDCG with modeled p99 ≤ target):")
	for _, b := range r.Best {
		ans := "none meets it"
		if b.Design != nil {
			ans = fmt.Sprintf("%d %s (NDCG %.4f, p99 %.3f ms)", *b.Design, r.Designs[*b.Design].Name, b.NDCG, *b.P99Ms)
		}
		fmt.Fprintf(w, "  @%s QPS, p99 ≤ %s ms: %s\n", formatQPS(b.QPS), formatQPS(b.TargetMs), ans)
	}
}

// qpsIndex is the position of qps in r.QPS.
func (r *Result) qpsIndex(qps float64) int {
	for i, q := range r.QPS {
		if q == qps {
			return i
		}
	}
	return -1
}

// writeFastest prints the fastest design per quality target at each QPS.
func (r *Result) writeFastest(w io.Writer) {
	if len(r.QualityTargets) == 0 {
		return
	}
	fmt.Fprintln(w, "\nfastest design per quality target (lowest modeled p99 with NDCG ≥ target):")
	for _, f := range r.Fastest {
		ans := "none reaches it"
		if f.Design != nil {
			ans = fmt.Sprintf("%d %s (NDCG %.4f, p99 %.3f ms)", *f.Design, r.Designs[*f.Design].Name, f.NDCG, *f.P99Ms)
		}
		fmt.Fprintf(w, "  @%s QPS, NDCG ≥ %s: %s\n", formatQPS(f.QPS), strconv.FormatFloat(f.MinNDCG, 'g', -1, 64), ans)
	}
}
