package report

import (
	"cmp"
	"image/color"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/flowrun/flowrun/framework/bench"
)

// hitSeries is one line of the hit-rate figure: a graph at one value of
// the sweep keys other than the x axis.
type hitSeries struct {
	graph, rest string
	pts         plotter.XYs
}

// hitRates are the hit-rate figure's lines, and the graphs that pick
// their line style and marker.
type hitRates struct {
	all    []*hitSeries
	graphs []string
}

// find is the line of graph at rest, added when new.
func (h *hitRates) find(graph, rest string) *hitSeries {
	for _, s := range h.all {
		if s.graph == graph && s.rest == rest {
			return s
		}
	}
	s := &hitSeries{graph: graph, rest: rest}
	h.all = append(h.all, s)
	if !slices.Contains(h.graphs, graph) {
		h.graphs = append(h.graphs, graph)
	}
	return s
}

// collectHitRates gathers the hit rates of the comparisons whose sweep has
// the first one's x axis (sweepAxis), and returns that axis' key.
func collectHitRates(benches []*bench.Comparison) (string, *hitRates) {
	h := &hitRates{}
	xKey := ""
	for _, b := range benches {
		key := sweepAxis(b.Sweep)
		if key == "" {
			continue
		}
		if xKey == "" {
			xKey = key
		} else if xKey != key {
			continue // one x axis per figure
		}
		for _, r := range b.Runs {
			if r.HitRate == nil {
				continue
			}
			var x float64
			var rest []string
			for _, kv := range r.Point {
				k, v, _ := strings.Cut(kv, "=")
				if k == key {
					x, _ = strconv.ParseFloat(v, 64)
				} else {
					rest = append(rest, kv)
				}
			}
			if key == "cache.size" && x <= 1 {
				x *= 100
			}
			s := h.find(r.Graph, shortPoint(rest))
			s.pts = append(s.pts, plotter.XY{X: x, Y: 100 * *r.HitRate})
		}
	}
	return xKey, h
}

// colour is a line's own colour: two lines never share one, also when
// they are two graphs at the same point (their dashes and markers tell
// the graphs apart as well).
func (h *hitRates) colour(s *hitSeries) color.Color {
	return palette(slices.Index(h.all, s))
}

// hitRateFigure draws hit rate against the swept cache size (or the first
// numeric sweep key): a colour per line, a line style and marker per
// graph; the x axis ends at the largest value swept.
func hitRateFigure(benches []*bench.Comparison) (figure, bool) {
	xKey, h := collectHitRates(benches)
	if len(h.all) == 0 {
		return figure{}, false
	}
	xLabel, title := xKey, "Cache hit rate vs "+xKey
	if xKey == "cache.size" {
		xLabel, title = "cache size (% of each table's rows)", "Cache hit rate vs cache size"
	}
	p := newPlot(title+" (training batches, whole run)", xLabel, "hit rate (%)")
	p.Y.Max = 100
	maxX := 0.0
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}}
	for _, s := range h.all {
		slices.SortFunc(s.pts, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
		l, pts, err := plotter.NewLinePoints(s.pts)
		if err != nil {
			continue
		}
		gi := slices.Index(h.graphs, s.graph)
		l.Color, pts.Color = h.colour(s), h.colour(s)
		l.Width = vg.Points(1.5)
		if gi > 0 {
			l.Dashes = []vg.Length{vg.Points(float64(2 + 2*gi)), vg.Points(3)}
		}
		pts.Shape = shapes[gi%len(shapes)]
		pts.Radius = vg.Points(3)
		p.Add(l, pts)
		p.Legend.Add(strings.TrimSpace(s.graph+" "+s.rest), l, pts)
		for _, pt := range s.pts {
			maxX = max(maxX, pt.X)
		}
	}
	// Hit rate grows with the cache: the bottom right is where the
	// legend hides no line.
	p.X.Min, p.X.Max = 0, maxX
	p.Legend.Top = false
	return figure{name: "hitrate", plots: []*plot.Plot{p}, w: 8 * vg.Inch, h: 5 * vg.Inch}, true
}

// sweepAxis is the sweep key a hit-rate figure puts on its x axis:
// cache.size when swept, else the first key whose values are all numbers.
func sweepAxis(sweep []bench.Sweep) string {
	numeric := func(s bench.Sweep) bool {
		for _, v := range s.Values {
			if _, err := strconv.ParseFloat(v, 64); err != nil {
				return false
			}
		}
		return len(s.Values) > 1
	}
	for _, s := range sweep {
		if s.Key == "cache.size" && numeric(s) {
			return s.Key
		}
	}
	for _, s := range sweep {
		if numeric(s) {
			return s.Key
		}
	}
	return ""
}
