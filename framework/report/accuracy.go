package report

import (
	"cmp"
	"image/color"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/flowrun/flowrun/framework/bench"
)

// The sweep keys the accuracy figure treats specially: runs that differ
// only in the seed are one point (their mean, the spread as a bar), and
// a line joins the points that differ only in the host tables' precision
// (the x axis moves with it).
const (
	seedKey      = "seed"
	precisionKey = "embedding.precision"
)

// accPoint is one point of the accuracy figure: a graph at one sweep point
// but the seed, with each seed's relative drops.
type accPoint struct {
	x         float64
	acc, aucs []float64
}

// accSeries is one line: a graph at one sweep point but the seed and the
// precision.
type accSeries struct {
	label string
	pts   map[string]*accPoint // by precision
}

// memoryFactor is the run's host-table memory over FP32: results.json's
// memory_compression by Eq. 2–3 (the cache's own terms are not in it),
// 1 for FP32 tables.
func memoryFactor(r bench.Run) float64 {
	if mc := r.Results.MemoryCompression; mc != nil {
		return mc.Eq3
	}
	return 1
}

// relDrop is Eq. 1: (base − v)/base · 100, false where either is missing
// or base is 0.
func relDrop(base, v *float64) (float64, bool) {
	if base == nil || v == nil || *base == 0 {
		return 0, false
	}
	return (*base - *v) / *base * 100, true
}

// find is the line labelled label, added when new.
func find(series []*accSeries, label string) ([]*accSeries, *accSeries) {
	if i := slices.IndexFunc(series, func(s *accSeries) bool { return s.label == label }); i >= 0 {
		return series, series[i]
	}
	s := &accSeries{label: label, pts: map[string]*accPoint{}}
	return append(series, s), s
}

// collectAccuracy gathers, from comparisons of two graphs or more, every
// run but the first graph's at each point into lines (in the order they
// first appear), with its relative accuracy and AUC drops against that
// first graph's run (Eq. 1), and reports whether any run has
// low-precision tables (else there is no trade-off to draw).
func collectAccuracy(benches []*bench.Comparison) ([]*accSeries, bool) {
	var series []*accSeries
	lowprec := false
	for _, b := range benches {
		n := len(b.Graphs)
		for start := 0; n > 1 && start+n <= len(b.Runs); start += n {
			base := b.Runs[start]
			if base.Results == nil {
				continue
			}
			for _, r := range b.Runs[start+1 : start+n] {
				if r.Results == nil {
					continue
				}
				acc, okAcc := relDrop(base.Results.Metrics.Accuracy, r.Results.Metrics.Accuracy)
				auc, okAUC := relDrop(base.Results.Metrics.AUC, r.Results.Metrics.AUC)
				if !okAcc || !okAUC {
					continue
				}
				lowprec = lowprec || r.Results.MemoryCompression != nil
				var rest []string
				prec := ""
				for _, kv := range r.Point {
					k, v, _ := strings.Cut(kv, "=")
					switch k {
					case seedKey:
					case precisionKey:
						prec = v
					default:
						rest = append(rest, kv)
					}
				}
				var s *accSeries
				series, s = find(series, strings.TrimSpace(r.Graph+" "+shortPoint(rest)))
				p := s.pts[prec]
				if p == nil {
					p = &accPoint{x: memoryFactor(r)}
					s.pts[prec] = p
				}
				p.acc, p.aucs = append(p.acc, acc), append(p.aucs, auc)
			}
		}
	}
	return series, lowprec
}

// xyErrors is a line's points with their spread below and above.
type xyErrors struct {
	plotter.XYs
	plotter.YErrors
}

// points are the line's points by memory, each the mean of its seeds'
// drops (accuracy, or AUC with auc), with their min and max as the bar.
func (s *accSeries) points(auc bool) xyErrors {
	var e xyErrors
	ps := make([]*accPoint, 0, len(s.pts))
	for _, p := range s.pts {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b *accPoint) int { return cmp.Compare(a.x, b.x) })
	for _, p := range ps {
		drops := p.acc
		if auc {
			drops = p.aucs
		}
		sum, lo, hi := 0.0, drops[0], drops[0]
		for _, d := range drops {
			sum, lo, hi = sum+d, min(lo, d), max(hi, d)
		}
		m := sum / float64(len(drops))
		e.XYs = append(e.XYs, plotter.XY{X: p.x, Y: m})
		e.YErrors = append(e.YErrors, struct{ Low, High float64 }{m - lo, hi - m})
	}
	return e
}

// accuracyFigure draws, side by side, each run's relative accuracy drop
// and relative AUC drop (the mixed-precision paper's Eq. 1, against the
// first graph of its comparison at the same point) against its host
// tables' memory over FP32 (Eq. 2–3): the paper's trade-off between memory
// and accuracy. The AUC panel is there because a short run's accuracy at
// the 0.5 threshold moves with its calibration far more than its ranking
// does. Runs that differ only in the seed are one point (mean, min–max
// bar); a line joins the precisions of one graph at one point. Drawn when
// some run has low-precision tables. Everything in it is measured.
func accuracyFigure(benches []*bench.Comparison) (figure, bool) {
	series, lowprec := collectAccuracy(benches)
	if !lowprec {
		return figure{}, false
	}
	xLabel := "host tables' memory / FP32 (Eq. 2–3; the cache's rows not counted)"
	acc := accuracyPlot(series, false, "Accuracy drop vs memory (held-out, measured; mean over seeds, bars min–max)",
		xLabel, "relative accuracy drop (%, Eq. 1)")
	auc := accuracyPlot(series, true, "AUC drop vs memory (held-out, measured; mean over seeds, bars min–max)",
		xLabel, "relative AUC drop (%, Eq. 1 on the AUC)")
	return figure{name: "accuracy", plots: []*plot.Plot{acc, auc}, w: 16 * vg.Inch, h: 6 * vg.Inch}, true
}

// accuracyPlot is one panel of the accuracy figure: the accuracy drops,
// or the AUC drops with auc.
func accuracyPlot(series []*accSeries, auc bool, title, xLabel, yLabel string) *plot.Plot {
	p := newPlot(title, xLabel, yLabel)
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}}
	for i, s := range series {
		e := s.points(auc)
		l, pts, err := plotter.NewLinePoints(e.XYs)
		if err != nil {
			continue
		}
		bars, err := plotter.NewYErrorBars(e)
		if err != nil {
			continue
		}
		c := palette(i)
		l.Color, pts.Color, bars.Color = c, c, c
		l.Width = vg.Points(1.2)
		if i >= 7 {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		pts.Shape, pts.Radius = shapes[i%len(shapes)], vg.Points(3)
		p.Add(l, pts, bars)
		p.Legend.Add(s.label, l, pts)
		for j, xy := range e.XYs {
			p.Y.Min = min(p.Y.Min, xy.Y-e.YErrors[j].Low)
			p.Y.Max = max(p.Y.Max, xy.Y+e.YErrors[j].High)
		}
	}
	zero := plotter.NewFunction(func(float64) float64 { return 0 })
	zero.Color = color.Gray{Y: 96}
	p.Add(zero)
	p.X.Min, p.X.Max = 0, 1
	headroom(p, p.Y.Max)
	return p
}
