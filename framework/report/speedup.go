package report

import (
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"

	"github.com/flowrun/flowrun/framework/bench"
)

// speedups are a comparison's speedups by sweep point (group) and graph.
type speedups struct {
	groups, graphs []string
	of             map[[2]string]*bench.Speedup
}

// speedupFigure draws the speedup of every graph of a bench over its first
// graph at each sweep point: modeled beside wall.
func speedupFigure(b *bench.Comparison, name string) (figure, bool) {
	if len(b.Graphs) < 2 {
		return figure{}, false
	}
	s := speedups{of: map[[2]string]*bench.Speedup{}}
	for _, r := range b.Runs {
		g := shortPoint(r.Point)
		if g == "" {
			g = "default"
		}
		if !slices.Contains(s.groups, g) {
			s.groups = append(s.groups, g)
		}
		if !slices.Contains(s.graphs, r.Graph) {
			s.graphs = append(s.graphs, r.Graph)
		}
		if r.Speedup != nil {
			s.of[[2]string{g, r.Graph}] = r.Speedup
		}
	}
	if len(s.of) == 0 {
		return figure{}, false
	}
	// A clock none of the runs has a figure for gets no panel.
	var plots []*plot.Plot
	modeled := func(s *bench.Speedup) float64 { return s.Modeled }
	wall := func(s *bench.Speedup) float64 { return s.Wall }
	if s.has(modeled) {
		plots = append(plots, s.panel("Speedup over "+b.Baseline+", modeled (device cost models)", "modeled speedup (×)", modeled))
	}
	if s.has(wall) {
		plots = append(plots, s.panel("Speedup over "+b.Baseline+", wall (measured here)", "wall speedup (×)", wall))
	}
	if len(plots) == 0 {
		return figure{}, false
	}
	return figure{name: name, plots: plots, w: vg.Length(len(plots)) * 6 * vg.Inch, h: 5 * vg.Inch}, true
}

// has reports whether some run has a figure on value's clock.
func (s speedups) has(value func(*bench.Speedup) float64) bool {
	for _, sp := range s.of {
		if value(sp) > 0 {
			return true
		}
	}
	return false
}

// panel draws one clock's speedups: a bar per graph in each group,
// labelled where there are few, and a dashed line at 1×.
func (s speedups) panel(title, ylabel string, value func(*bench.Speedup) float64) *plot.Plot {
	p := newPlot(title, "", ylabel)
	width := vg.Points(float64(max(6, min(28, 300/(len(s.groups)*len(s.graphs))))))
	top := 1.0
	for k, g := range s.graphs {
		vals := make(plotter.Values, len(s.groups))
		var labels plotter.XYLabels
		for i, grp := range s.groups {
			if sp := s.of[[2]string{grp, g}]; sp != nil && value(sp) > 0 {
				vals[i] = value(sp)
				top = max(top, vals[i])
				labels.XYs = append(labels.XYs, plotter.XY{X: float64(i), Y: vals[i]})
				labels.Labels = append(labels.Labels, speedupLabel(vals[i]))
			}
		}
		bc, err := plotter.NewBarChart(vals, width)
		if err != nil {
			continue
		}
		bc.Color = palette(k)
		bc.LineStyle.Width = vg.Points(0.5)
		bc.Offset = width * vg.Length(float64(k)-float64(len(s.graphs)-1)/2)
		p.Add(bc)
		p.Legend.Add(g, bc)
		if len(s.groups)*len(s.graphs) <= 24 && len(labels.XYs) > 0 {
			if l, err := plotter.NewLabels(labels); err == nil {
				for i := range l.TextStyle {
					l.TextStyle[i].Font.Size = vg.Points(7)
					l.TextStyle[i].XAlign = text.XCenter
				}
				l.Offset = vg.Point{X: bc.Offset, Y: vg.Points(2)}
				p.Add(l)
			}
		}
	}
	one := plotter.NewFunction(func(float64) float64 { return 1 })
	one.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
	one.Color = color.Gray{Y: 80}
	p.Add(one)
	headroom(p, top)
	nominalX(p, s.groups)
	return p
}

// speedupLabel prints a speedup with two decimals below 10× (1.01×, not
// %.2g's "1×", which hides a 1 % difference), one up to 100×, none above.
func speedupLabel(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f×", v)
	case v >= 10:
		return fmt.Sprintf("%.1f×", v)
	}
	return fmt.Sprintf("%.2f×", v)
}
