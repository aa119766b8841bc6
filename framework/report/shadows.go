package report

import (
	"cmp"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/flowrun/flowrun/framework/results"
)

// shadowLine is one policy's shadows against cache size, from one run:
// its hit rate (%) and the modeled link time of its traffic per training
// batch (ms; absent without a link).
type shadowLine struct {
	label     string
	hit, link plotter.XYs
	linked    bool
}

// shadowSource is one run's shadows and its training batches.
type shadowSource struct {
	label   string
	batches int
	shadows []results.Shadow
}

// shadowSources are the runs with shadow policies (results.json's
// shadows) and the rows of a bench sweep by shadows, one source per
// graph of a comparison.
func (in *Input) shadowSources() []shadowSource {
	var src []shadowSource
	for _, r := range in.Runs {
		if len(r.Res.Shadows) > 0 {
			src = append(src, shadowSource{label: r.Label, batches: r.Res.Batches, shadows: r.Res.Shadows})
		}
	}
	for _, b := range in.Benches {
		for _, r := range b.Runs {
			if !r.FromShadows || r.Shadow == nil {
				continue
			}
			i := slices.IndexFunc(src, func(s shadowSource) bool { return s.label == r.Graph+" (shadows)" })
			if i < 0 {
				src = append(src, shadowSource{label: r.Graph + " (shadows)", batches: r.Batches})
				i = len(src) - 1
			}
			src[i].shadows = append(src[i].shadows, *r.Shadow)
		}
	}
	return src
}

// policyName is a shadow's plugin as a legend shows it: a builtin's name,
// a binary's base name.
func policyName(plugin string) string {
	if name, ok := strings.CutPrefix(plugin, "builtin:"); ok {
		return name
	}
	return filepath.Base(plugin)
}

// collectShadows makes a line per policy per source, its points sorted by
// size; x is the size in % of each table's rows when every size is a
// fraction, else the rows per table (percent says which).
func collectShadows(src []shadowSource) (lines []*shadowLine, percent bool) {
	percent = true
	for _, s := range src {
		for _, sh := range s.shadows {
			percent = percent && sh.Size <= 1
		}
	}
	for _, s := range src {
		for _, sh := range s.shadows {
			label := policyName(sh.Plugin)
			if len(src) > 1 {
				label += " · " + s.label
			}
			i := slices.IndexFunc(lines, func(l *shadowLine) bool { return l.label == label })
			if i < 0 {
				lines = append(lines, &shadowLine{label: label})
				i = len(lines) - 1
			}
			l := lines[i]
			x := float64(sh.Rows)
			if percent {
				x = 100 * sh.Size
			}
			l.hit = append(l.hit, plotter.XY{X: x, Y: 100 * sh.HitRate})
			if sh.Link != "" && s.batches > 0 {
				l.linked = true
				l.link = append(l.link, plotter.XY{X: x, Y: sh.ModeledLinkMs / float64(s.batches)})
			}
		}
	}
	for _, l := range lines {
		for _, pts := range []plotter.XYs{l.hit, l.link} {
			slices.SortFunc(pts, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
		}
	}
	return lines, percent
}

// shadowFigure draws every shadow policy at once against cache size: hit
// rate on the left, the modeled link time of its traffic per training
// batch on the right (when some shadow has a link), a colour and marker
// per policy and run.
func shadowFigure(in *Input) (figure, bool) {
	lines, percent := collectShadows(in.shadowSources())
	if len(lines) == 0 {
		return figure{}, false
	}
	xLabel := "cache size (% of each table's rows)"
	if !percent {
		xLabel = "cache size (rows per table)"
	}
	hit := newPlot("Shadow policies: hit rate (training batches)", xLabel, "hit rate (%)")
	hit.Y.Max = 100
	hit.Legend.Top = false
	link := newPlot("Shadow policies: link time per batch (modeled)", xLabel, "modeled link time per batch (ms)")
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}, draw.RingGlyph{}}
	linked, top, right := false, 0.0, 0.0
	for i, l := range lines {
		for _, panel := range []struct {
			p   *plot.Plot
			pts plotter.XYs
		}{{hit, l.hit}, {link, l.link}} {
			if len(panel.pts) == 0 {
				continue
			}
			ln, pts, err := plotter.NewLinePoints(panel.pts)
			if err != nil {
				continue
			}
			ln.Color, pts.Color = palette(i), palette(i)
			ln.Width = vg.Points(1.5)
			pts.Shape, pts.Radius = shapes[i%len(shapes)], vg.Points(3)
			panel.p.Add(ln, pts)
			panel.p.Legend.Add(l.label, ln, pts)
		}
		for _, pt := range l.link {
			top = max(top, pt.Y)
		}
		for _, pt := range l.hit {
			right = max(right, pt.X)
		}
		linked = linked || l.linked
	}
	// From no cache to a little past the largest size: a size swept once
	// stays off the frame's edge.
	for _, p := range []*plot.Plot{hit, link} {
		p.X.Min, p.X.Max = 0, right*1.05
	}
	plots := []*plot.Plot{hit}
	if linked {
		headroom(link, top)
		plots = append(plots, link)
	}
	return figure{name: "shadows", plots: plots, w: vg.Length(len(plots)) * 6 * vg.Inch, h: 5 * vg.Inch}, true
}
