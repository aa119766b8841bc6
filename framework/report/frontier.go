package report

import (
	"fmt"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/flowrun/flowrun/framework/search"
)

// frontierSeries are one QPS's points of a search: every design that
// serves it (not overloaded, with a quality), and the frontier's.
type frontierSeries struct {
	qps             float64
	all, front      plotter.XYs
	frontIDs        []string
	overloaded, out int
}

// collectFrontier gathers a search's points per QPS: x the modeled p99
// in ms, y the NDCG.
func collectFrontier(s *search.Result) []frontierSeries {
	series := make([]frontierSeries, len(s.QPS))
	for qi, q := range s.QPS {
		fs := &series[qi]
		fs.qps = q
		for _, d := range s.Designs {
			if qi >= len(d.Serving) || d.NDCG == nil {
				fs.out++
				continue
			}
			l := d.Serving[qi]
			if l.Overload != "" || l.P99Ms == nil {
				fs.overloaded++
				continue
			}
			fs.all = append(fs.all, plotter.XY{X: *l.P99Ms, Y: *d.NDCG})
		}
		for _, id := range s.Frontiers[qi].Designs {
			d := s.Designs[id]
			fs.front = append(fs.front, plotter.XY{X: *d.Serving[qi].P99Ms, Y: *d.NDCG})
			fs.frontIDs = append(fs.frontIDs, fmt.Sprint(id))
		}
	}
	return series
}

// frontierFigure draws a search's quality against its modeled p99, one
// colour per QPS: every design that serves the QPS as a ring (larger for
// earlier rates), the frontier's designs as filled triangles joined by a
// staircase
// and labelled with their design IDs. Overloaded designs have no p99 and
// are counted in the legend instead.
func frontierFigure(s *search.Result, name string) (figure, bool) {
	series := collectFrontier(s)
	p := newPlot("Quality vs tail latency, design-space search (p99 modeled, NDCG measured)", "p99 latency (ms, modeled)", "NDCG of the served list")
	drawn := false
	for i, fs := range series {
		if len(fs.all) == 0 {
			continue
		}
		drawn = true
		c := palette(i)
		all, err := plotter.NewScatter(fs.all)
		if err != nil {
			continue
		}
		// Designs often sit at one point at several QPS (no queueing at
		// light load): earlier rates get larger rings, so that points
		// drawn on one another show as concentric rings.
		grow := vg.Points(2 * float64(len(series)-1-i))
		all.Shape, all.Color, all.Radius = draw.RingGlyph{}, c, vg.Points(3)+grow
		front, err := plotter.NewLine(staircase(fs.front))
		if err != nil {
			continue
		}
		front.Color, front.Width = c, vg.Points(1.2)
		marks, err := plotter.NewScatter(fs.front)
		if err != nil {
			continue
		}
		marks.Shape, marks.Color, marks.Radius = draw.PyramidGlyph{}, c, vg.Points(3)+grow
		p.Add(all, front, marks)
		if labels, err := plotter.NewLabels(plotter.XYLabels{XYs: fs.front, Labels: fs.frontIDs}); err == nil {
			for j := range labels.TextStyle {
				labels.TextStyle[j].Color = c
			}
			labels.Offset = vg.Point{X: vg.Points(4) + grow, Y: vg.Points(2)}
			p.Add(labels)
		}
		legend := fmt.Sprintf("%s QPS: %d designs, frontier %s", strconv.FormatFloat(fs.qps, 'g', -1, 64), len(fs.all), strings.Join(fs.frontIDs, ","))
		if fs.overloaded > 0 {
			legend += fmt.Sprintf(", %d overloaded", fs.overloaded)
		}
		p.Legend.Add(legend, front, marks)
	}
	if !drawn {
		return figure{}, false
	}
	// NDCGs of designs differ by points, not by their whole range: the
	// y axis spans the data, not 0 to 1.
	lo, hi := 1.0, 0.0
	for _, fs := range series {
		for _, pt := range fs.all {
			lo, hi = min(lo, pt.Y), max(hi, pt.Y)
		}
	}
	pad := max((hi-lo)*0.15, 0.005)
	p.Y.Min, p.Y.Max = max(0, lo-pad), min(1, hi+pad)
	maxX := 0.0
	for _, fs := range series {
		for _, pt := range fs.all {
			maxX = max(maxX, pt.X)
		}
	}
	p.X.Min, p.X.Max = 0, maxX*1.08
	// Better designs are up and to the left: the legend goes bottom right.
	p.Legend.Top = false
	return figure{name: name, plots: []*plot.Plot{p}, w: 8 * vg.Inch, h: 5.5 * vg.Inch}, true
}

// staircase joins frontier points (ascending p99, ascending quality) by
// steps: a design's quality holds until the next, slower one's p99.
func staircase(front plotter.XYs) plotter.XYs {
	var out plotter.XYs
	for i, pt := range front {
		if i > 0 {
			out = append(out, plotter.XY{X: pt.X, Y: front[i-1].Y})
		}
		out = append(out, pt)
	}
	return out
}

// readSearch adds the design-space search in the file at path.
func (in *Input) readSearch(path string) error {
	var s search.Result
	if err := readJSON(path, &s); err != nil {
		return err
	}
	if len(s.Frontiers) != len(s.QPS) {
		return fmt.Errorf("%s: a search with %d QPS and %d frontiers", path, len(s.QPS), len(s.Frontiers))
	}
	for qi, f := range s.Frontiers {
		for _, id := range f.Designs {
			if id < 0 || id >= len(s.Designs) || s.Designs[id].NDCG == nil || qi >= len(s.Designs[id].Serving) || s.Designs[id].Serving[qi].P99Ms == nil {
				return fmt.Errorf("%s: frontier at %g QPS names design %d, which has no figures", path, f.QPS, id)
			}
		}
	}
	in.Searches = append(in.Searches, &s)
	return nil
}

// searchFigures are the frontier figures: frontier, frontier-2, ...
func searchFigures(searches []*search.Result) []figure {
	var figs []figure
	for _, s := range searches {
		name := "frontier"
		if len(figs) > 0 {
			name = fmt.Sprintf("frontier-%d", len(figs)+1)
		}
		if f, ok := frontierFigure(s, name); ok {
			figs = append(figs, f)
		}
	}
	return figs
}
