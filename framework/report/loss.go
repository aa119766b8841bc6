package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// lossFigure draws each run's training loss per batch. Runs whose curves
// are identical (exact graphs on the same data) share one line.
func lossFigure(runs []Run) (figure, bool) {
	type curve struct {
		names []string
		pts   plotter.XYs
	}
	var curves []*curve
	for _, r := range runs {
		l := r.Res.Metrics.Loss
		if l == nil || len(l.Points) < 2 {
			continue
		}
		pts := make(plotter.XYs, len(l.Points))
		for j, pt := range l.Points {
			pts[j] = plotter.XY{X: float64(pt.Batch), Y: pt.Value}
		}
		found := false
		for _, c := range curves {
			if slices.Equal(c.pts, pts) {
				c.names = append(c.names, r.Label)
				found = true
				break
			}
		}
		if !found {
			curves = append(curves, &curve{names: []string{r.Label}, pts: pts})
		}
	}
	if len(curves) == 0 {
		return figure{}, false
	}
	title := "Training loss"
	if len(curves) < len(runs) {
		title += " (identical curves drawn once)"
	}
	p := newPlot(title, "training batch", "loss (BCE, mean over the batch)")
	p.Y.Min, p.Y.Max = math.Inf(1), math.Inf(-1) // the data's range, not from 0
	top := math.Inf(-1)
	for i, c := range curves {
		line, err := plotter.NewLine(c.pts)
		if err != nil {
			continue
		}
		line.Color = palette(i)
		line.Width = vg.Points(1.5)
		p.Add(line)
		label := strings.Join(c.names, " = ")
		if len(label) > 60 {
			label = fmt.Sprintf("%s = … (%d runs)", c.names[0], len(c.names))
		}
		p.Legend.Add(label, line)
		for _, pt := range c.pts {
			top = max(top, pt.Y)
		}
	}
	// Room for the legend above the curves.
	if lo := p.Y.Min; !math.IsInf(lo, 0) {
		p.Y.Max = top + 0.25*(top-lo)
	}
	return figure{name: "loss", plots: []*plot.Plot{p}, w: 7 * vg.Inch, h: 5 * vg.Inch}, true
}
