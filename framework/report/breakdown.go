package report

import (
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/flowrun/flowrun/framework/results"
)

// breakdownFigure stacks each run's per-stage time per batch, wall and
// modeled side by side, and marks the run's iteration time on each clock:
// in a pipelined run the stages overlap and the iteration is below the
// stack, in a sequential one it is the stack.
func breakdownFigure(runs []Run) (figure, bool) {
	var stages []string
	for _, r := range runs {
		for _, s := range r.Res.Stages {
			if !slices.Contains(stages, s.Name) {
				stages = append(stages, s.Name)
			}
		}
	}
	if len(runs) == 0 || len(stages) == 0 {
		return figure{}, false
	}
	labels := make([]string, len(runs))
	for i, r := range runs {
		labels[i] = r.Label
	}
	wall := stackPanel(runs, stages, labels, "Per-stage time per batch, wall (measured here)", "wall ms per batch (mean)",
		func(s results.Stage) (float64, bool) { return s.WallMs.Mean, true },
		func(r *results.Results) float64 { return r.IterationMs.Wall })
	modeled := stackPanel(runs, stages, labels, "Per-stage time per batch, modeled (device cost models)", "modeled ms per batch (mean)",
		func(s results.Stage) (float64, bool) {
			if s.ModeledMs == nil {
				return 0, false
			}
			return s.ModeledMs.Mean, true
		},
		func(r *results.Results) float64 { return r.IterationMs.Modeled })
	return figure{name: "breakdown", plots: []*plot.Plot{wall, modeled}, w: 12 * vg.Inch, h: 5 * vg.Inch}, true
}

// stackPanel stacks each run's value per stage, in the stages' order, and
// marks each run's iteration time.
func stackPanel(runs []Run, stages, labels []string, title, ylabel string, value func(results.Stage) (float64, bool), iter func(*results.Results) float64) *plot.Plot {
	p := newPlot(title, "", ylabel)
	width := vg.Points(float64(min(36, 240/len(runs))))
	var below *plotter.BarChart
	top := 0.0
	for k, name := range stages {
		vals := make(plotter.Values, len(runs))
		has := false
		for i, r := range runs {
			for _, s := range r.Res.Stages {
				if v, ok := value(s); ok && s.Name == name {
					vals[i], has = v, true
				}
			}
		}
		if !has {
			continue
		}
		bc, err := plotter.NewBarChart(vals, width)
		if err != nil {
			continue
		}
		bc.Color = palette(k)
		bc.LineStyle.Width = vg.Points(0.5)
		if below != nil {
			bc.StackOn(below)
		}
		below = bc
		p.Add(bc)
		p.Legend.Add(name, bc)
		for i := range vals {
			top = max(top, bc.BarHeight(i))
		}
	}
	var pts plotter.XYs
	for i, r := range runs {
		if v := iter(r.Res); v > 0 {
			pts = append(pts, plotter.XY{X: float64(i), Y: v})
		}
	}
	for _, pt := range pts {
		top = max(top, pt.Y)
	}
	headroom(p, top)
	if len(pts) > 0 {
		if sc, err := plotter.NewScatter(pts); err == nil {
			sc.GlyphStyle = draw.GlyphStyle{Shape: draw.PyramidGlyph{}, Radius: vg.Points(4), Color: color.Black}
			p.Add(sc)
			p.Legend.Add("iteration time", sc)
		}
	}
	nominalX(p, labels)
	return p
}
