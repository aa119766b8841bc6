package report

import (
	"cmp"
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
// but the seed, with the drops of its seeds.
type accPoint struct {
	x     float64
	drops []float64
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

// collectAccuracy gathers every bench run with an accuracy drop into lines,
// in the order they first appear, and reports whether any run has
// low-precision tables (else there is no trade-off to draw).
func collectAccuracy(benches []*bench.Comparison) ([]*accSeries, bool) {
	var series []*accSeries
	lowprec := false
	for _, b := range benches {
		for _, r := range b.Runs {
			if r.AccuracyDropPct == nil || r.Results == nil {
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
			label := strings.TrimSpace(r.Graph + " " + shortPoint(rest))
			i := slices.IndexFunc(series, func(s *accSeries) bool { return s.label == label })
			if i < 0 {
				i = len(series)
				series = append(series, &accSeries{label: label, pts: map[string]*accPoint{}})
			}
			p := series[i].pts[prec]
			if p == nil {
				p = &accPoint{x: memoryFactor(r)}
				series[i].pts[prec] = p
			}
			p.drops = append(p.drops, *r.AccuracyDropPct)
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
// drops, with their min and max as the error bar.
func (s *accSeries) points() xyErrors {
	var e xyErrors
	ps := make([]*accPoint, 0, len(s.pts))
	for _, p := range s.pts {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b *accPoint) int { return cmp.Compare(a.x, b.x) })
	for _, p := range ps {
		sum, lo, hi := 0.0, p.drops[0], p.drops[0]
		for _, d := range p.drops {
			sum, lo, hi = sum+d, min(lo, d), max(hi, d)
		}
		m := sum / float64(len(p.drops))
		e.XYs = append(e.XYs, plotter.XY{X: p.x, Y: m})
		e.YErrors = append(e.YErrors, struct{ Low, High float64 }{m - lo, hi - m})
	}
	return e
}

// accuracyFigure draws each bench run's relative accuracy drop (the
// mixed-precision paper's Eq. 1, against the comparison's first graph)
// against its host tables' memory over FP32 (Eq. 2–3): the paper's
// trade-off between memory and accuracy. Runs that differ only in the
// seed are one point (mean, min–max bar); a line joins the precisions of
// one graph at one sweep point. Drawn when some run has low-precision
// tables. Everything in it is measured.
func accuracyFigure(benches []*bench.Comparison) (figure, bool) {
	series, lowprec := collectAccuracy(benches)
	if !lowprec {
		return figure{}, false
	}
	p := newPlot("Accuracy drop vs memory (held-out accuracy, measured; mean over seeds, bars min–max)",
		"host tables' memory / FP32 (Eq. 2–3; the cache's rows not counted)", "relative accuracy drop (%, Eq. 1)")
	p.Y.Min = 0
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}}
	for i, s := range series {
		e := s.points()
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
	p.Add(plotter.NewFunction(func(float64) float64 { return 0 }))
	p.X.Min, p.X.Max = 0, 1.05
	headroom(p, p.Y.Max)
	return figure{name: "accuracy", plots: []*plot.Plot{p}, w: 9 * vg.Inch, h: 6 * vg.Inch}, true
}
