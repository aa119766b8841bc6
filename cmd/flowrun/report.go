package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	_ "gonum.org/v1/plot/vg/vgimg" // png
	_ "gonum.org/v1/plot/vg/vgsvg" // svg

	"github.com/flowrun/flowrun/framework/results"
)

func newReportCmd() *cobra.Command {
	var out, formats string
	cmd := &cobra.Command{
		Use:   "report FILE... --out DIR",
		Short: "Draw figures from results.json and bench JSON files",
		Long: `Draw the papers' figures from what runs left behind, as PNG and SVG files in
DIR:

  breakdown   time per batch of each stage, stacked, per run: wall (measured
              on this machine) beside modeled (the devices' cost models),
              with each run's iteration time marked (ScratchPipe Fig. 12)
  speedup     speedup over the first graph of a flowrun bench, modeled and
              wall, per sweep point (ScratchPipe Fig. 13)
  hitrate     cache hit rate against cache size, from a flowrun bench
              --sweep cache.size=... (ScratchPipe Fig. 6)
  loss        training loss per batch of each run

FILE is a results.json (flowrun run --out) or the JSON of flowrun bench
(--json or --out); a bench's runs count as runs of their own. A figure is
drawn only when its data is there.

  flowrun bench graphs/no-cache.yaml graphs/scratchpipe.yaml --out bench.json
  flowrun bench graphs/scratchpipe.yaml --sweep cache.size=0.05,0.1,0.2 --out sweep.json
  flowrun report bench.json sweep.json --out figures/`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageError{errors.New("--out DIR is required")}
			}
			exts, err := reportFormats(formats)
			if err != nil {
				return usageError{err}
			}
			in, err := readReportInputs(args)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			written, err := drawReport(in, out, exts)
			for _, w := range written {
				fmt.Fprintln(cmd.OutOrStdout(), w)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the figures into `DIR` (created if missing)")
	cmd.Flags().StringVar(&formats, "format", "png,svg", "image formats, comma-separated: png, svg")
	return cmd
}

func reportFormats(s string) ([]string, error) {
	var exts []string
	for _, f := range strings.Split(s, ",") {
		switch f = strings.TrimSpace(strings.ToLower(f)); f {
		case "png", "svg":
			if !slices.Contains(exts, f) {
				exts = append(exts, f)
			}
		default:
			return nil, fmt.Errorf("--format: unknown format %q (png, svg)", f)
		}
	}
	return exts, nil
}

// reportRun is one run a figure shows.
type reportRun struct {
	Label string
	Res   *results.Results
	// File is the input the run came from, to tell apart runs of one
	// graph from different files.
	File string
}

// reportInput is everything the files given to report hold.
type reportInput struct {
	runs    []reportRun
	benches []*benchReport
}

// readJSON decodes the JSON file at path into v.
func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func readReportInputs(paths []string) (*reportInput, error) {
	in := &reportInput{}
	for _, path := range paths {
		var probe struct {
			Kind string `json:"kind"`
		}
		if err := readJSON(path, &probe); err != nil {
			return nil, err
		}
		if probe.Kind == benchKind {
			var b benchReport
			if err := readJSON(path, &b); err != nil {
				return nil, err
			}
			in.benches = append(in.benches, &b)
			for _, r := range b.Runs {
				if r.Results != nil {
					in.runs = append(in.runs, reportRun{Label: strings.TrimSpace(r.Graph + " " + shortPoint(r.Point)), Res: r.Results, File: path})
				}
			}
			continue
		}
		res, err := results.Read(path)
		if err != nil {
			return nil, err
		}
		if res.Graph == "" || res.Stages == nil {
			return nil, fmt.Errorf("%s: neither a results.json nor the JSON of flowrun bench", path)
		}
		in.runs = append(in.runs, reportRun{Label: res.Graph, Res: res, File: path})
	}
	// With several files, a run without a sweep point says which file it
	// is from; runs that still share a label get their file, unless they
	// have it already, then their position.
	withFile := func(r reportRun) string { return fmt.Sprintf("%s (%s)", r.Label, fileStem(r.File)) }
	if len(paths) > 1 {
		for i, r := range in.runs {
			if !strings.Contains(r.Label, "=") {
				in.runs[i].Label = withFile(r)
			}
		}
	}
	for _, tag := range []func(r reportRun, n int) string{
		func(r reportRun, _ int) string {
			if strings.HasSuffix(r.Label, " ("+fileStem(r.File)+")") {
				return r.Label
			}
			return withFile(r)
		},
		func(r reportRun, n int) string { return fmt.Sprintf("%s #%d", r.Label, n) },
	} {
		count := map[string]int{}
		for _, r := range in.runs {
			count[r.Label]++
		}
		seen := map[string]int{}
		for i, r := range in.runs {
			if count[r.Label] > 1 {
				seen[r.Label]++
				in.runs[i].Label = tag(r, seen[r.Label])
			}
		}
	}
	return in, nil
}

// shortPoint writes a sweep point compactly: "cache.size=0.05" → "size=0.05".
func shortPoint(pt []string) string {
	parts := make([]string, len(pt))
	for i, kv := range pt {
		k, v, _ := strings.Cut(kv, "=")
		if j := strings.LastIndexByte(k, '.'); j >= 0 {
			k = k[j+1:]
		}
		parts[i] = k + "=" + v
	}
	return strings.Join(parts, " ")
}

// figure is one image: plots side by side, in inches.
type figure struct {
	name  string
	plots []*plot.Plot
	w, h  vg.Length
}

func drawReport(in *reportInput, dir string, exts []string) ([]string, error) {
	var figs []figure
	if f, ok := breakdownFigure(in.runs); ok {
		figs = append(figs, f)
	}
	n := 0
	for _, b := range in.benches {
		name := "speedup"
		if n > 0 {
			name = fmt.Sprintf("speedup-%d", n+1)
		}
		if f, ok := speedupFigure(b, name); ok {
			figs = append(figs, f)
			n++
		}
	}
	if f, ok := hitRateFigure(in.benches); ok {
		figs = append(figs, f)
	}
	if f, ok := lossFigure(in.runs); ok {
		figs = append(figs, f)
	}
	if len(figs) == 0 {
		return nil, errors.New("nothing to draw: no stage figures, bench comparison, sweep or loss curve in the files")
	}
	var written []string
	for _, f := range figs {
		for _, ext := range exts {
			path := filepath.Join(dir, f.name+"."+ext)
			if err := f.save(path, ext); err != nil {
				return written, fmt.Errorf("%s: %w", path, err)
			}
			written = append(written, path)
		}
	}
	return written, nil
}

func (f figure) save(path, ext string) error {
	c, err := draw.NewFormattedCanvas(f.w, f.h, ext)
	if err != nil {
		return err
	}
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: 1, Cols: len(f.plots), PadX: vg.Inch / 4, PadTop: vg.Inch / 10, PadBottom: vg.Inch / 10, PadLeft: vg.Inch / 10, PadRight: vg.Inch / 10}
	canvases := plot.Align([][]*plot.Plot{f.plots}, tiles, dc)
	for i, p := range f.plots {
		p.Draw(canvases[0][i])
	}
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(file); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}

// newPlot is a plot with flowrun's common style.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.Y.Min = 0
	p.Y.Tick.Marker = niceTicks{}
	p.X.Tick.Marker = niceTicks{}
	p.Add(plotter.NewGrid())
	return p
}

// niceTicks labels about six round values (1, 2, 2.5 or 5 × 10^k apart)
// with as few digits as they need, and puts a minor tick between them.
type niceTicks struct{}

func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return nil
	}
	raw := (hi - lo) / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/step-1e-9) * step; v <= hi+step*1e-9; v += step {
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
		if mid := v + step/2; mid <= hi {
			ticks = append(ticks, plot.Tick{Value: mid})
		}
	}
	// Round away float noise: 0.30000000000000004 → 0.3.
	for i, t := range ticks {
		if t.Label != "" {
			ticks[i].Label = strconv.FormatFloat(t.Value, 'g', 6, 64)
		}
	}
	return ticks
}

// headroom makes room above the data for the legend at the plot's top.
func headroom(p *plot.Plot, top float64) {
	if top > 0 {
		p.Y.Max = top * 1.3
	}
}

// nominalX sets category names on the x axis, slanted when there are many.
func nominalX(p *plot.Plot, names []string) {
	p.NominalX(names...) // sets its own ticker
	long := 0
	for _, n := range names {
		long += len(n)
	}
	if len(names) > 4 || long > 64 {
		p.X.Tick.Label.Rotation = math.Pi / 6
		p.X.Tick.Label.XAlign = text.XRight
		p.X.Tick.Label.YAlign = text.YCenter
	}
}

// palette is plotutil's, whose first colour is red: stages and graphs
// get the same colour in every figure.
func palette(i int) color.Color { return plotutil.Color(i) }

// breakdownFigure stacks each run's per-stage time per batch, wall and
// modeled side by side, and marks the run's iteration time on each clock:
// in a pipelined run the stages overlap and the iteration is below the
// stack, in a sequential one it is the stack.
func breakdownFigure(runs []reportRun) (figure, bool) {
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
	panel := func(title, ylabel string, value func(results.Stage) (float64, bool), iter func(*results.Results) float64) *plot.Plot {
		p := newPlot(title, "", ylabel)
		width := vg.Points(float64(min(36, 240/len(runs))))
		var below *plotter.BarChart
		top := 0.0
		for k, name := range stages {
			vals := make(plotter.Values, len(runs))
			any := false
			for i, r := range runs {
				for _, s := range r.Res.Stages {
					if v, ok := value(s); ok && s.Name == name {
						vals[i], any = v, true
					}
				}
			}
			if !any {
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
	wall := panel("Per-stage time per batch, wall (measured here)", "wall ms per batch (mean)",
		func(s results.Stage) (float64, bool) { return s.WallMs.Mean, true },
		func(r *results.Results) float64 { return r.IterationMs.Wall })
	modeled := panel("Per-stage time per batch, modeled (device cost models)", "modeled ms per batch (mean)",
		func(s results.Stage) (float64, bool) {
			if s.ModeledMs == nil {
				return 0, false
			}
			return s.ModeledMs.Mean, true
		},
		func(r *results.Results) float64 { return r.IterationMs.Modeled })
	return figure{name: "breakdown", plots: []*plot.Plot{wall, modeled}, w: 12 * vg.Inch, h: 5 * vg.Inch}, true
}

// speedupFigure draws the speedup of every graph of a bench over its first
// graph at each sweep point: modeled beside wall.
func speedupFigure(b *benchReport, name string) (figure, bool) {
	if len(b.Graphs) < 2 {
		return figure{}, false
	}
	var groups, graphs []string
	speedup := map[[2]string]*benchSpeedup{}
	for _, r := range b.Runs {
		g := shortPoint(r.Point)
		if g == "" {
			g = "default"
		}
		if !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
		if !slices.Contains(graphs, r.Graph) {
			graphs = append(graphs, r.Graph)
		}
		if r.Speedup != nil {
			speedup[[2]string{g, r.Graph}] = r.Speedup
		}
	}
	if len(speedup) == 0 {
		return figure{}, false
	}
	panel := func(title, ylabel string, value func(*benchSpeedup) float64) *plot.Plot {
		p := newPlot(title, "", ylabel)
		width := vg.Points(float64(max(6, min(28, 300/(len(groups)*len(graphs))))))
		top := 1.0
		for k, g := range graphs {
			vals := make(plotter.Values, len(groups))
			var labels plotter.XYLabels
			for i, grp := range groups {
				if sp := speedup[[2]string{grp, g}]; sp != nil && value(sp) > 0 {
					vals[i] = value(sp)
					top = max(top, vals[i])
					labels.XYs = append(labels.XYs, plotter.XY{X: float64(i), Y: vals[i]})
					labels.Labels = append(labels.Labels, fmt.Sprintf("%.2g×", vals[i]))
				}
			}
			bc, err := plotter.NewBarChart(vals, width)
			if err != nil {
				continue
			}
			bc.Color = palette(k)
			bc.LineStyle.Width = vg.Points(0.5)
			bc.Offset = width * vg.Length(float64(k)-float64(len(graphs)-1)/2)
			p.Add(bc)
			p.Legend.Add(g, bc)
			if len(groups)*len(graphs) <= 24 && len(labels.XYs) > 0 {
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
		nominalX(p, groups)
		return p
	}
	// A clock none of the runs has a figure for gets no panel.
	var plots []*plot.Plot
	has := func(value func(*benchSpeedup) float64) bool {
		for _, sp := range speedup {
			if value(sp) > 0 {
				return true
			}
		}
		return false
	}
	modeled := func(s *benchSpeedup) float64 { return s.Modeled }
	wall := func(s *benchSpeedup) float64 { return s.Wall }
	if has(modeled) {
		plots = append(plots, panel("Speedup over "+b.Baseline+", modeled (device cost models)", "modeled speedup (×)", modeled))
	}
	if has(wall) {
		plots = append(plots, panel("Speedup over "+b.Baseline+", wall (measured here)", "wall speedup (×)", wall))
	}
	if len(plots) == 0 {
		return figure{}, false
	}
	return figure{name: name, plots: plots, w: vg.Length(len(plots)) * 6 * vg.Inch, h: 5 * vg.Inch}, true
}

// hitRateFigure draws hit rate against the swept cache size (or the first
// numeric sweep key): a colour per value of the other sweep keys (e.g.
// the locality), a line style and marker per graph.
func hitRateFigure(benches []*benchReport) (figure, bool) {
	type series struct {
		graph, rest string
		pts         plotter.XYs
	}
	var all []*series
	var graphs, rests []string
	find := func(graph, rest string) *series {
		for _, s := range all {
			if s.graph == graph && s.rest == rest {
				return s
			}
		}
		s := &series{graph: graph, rest: rest}
		all = append(all, s)
		if !slices.Contains(graphs, graph) {
			graphs = append(graphs, graph)
		}
		if !slices.Contains(rests, rest) {
			rests = append(rests, rest)
		}
		return s
	}
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
			s := find(r.Graph, shortPoint(rest))
			s.pts = append(s.pts, plotter.XY{X: x, Y: 100 * *r.HitRate})
		}
	}
	if len(all) == 0 {
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
	for _, s := range all {
		slices.SortFunc(s.pts, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
		l, pts, err := plotter.NewLinePoints(s.pts)
		if err != nil {
			continue
		}
		gi, ri := slices.Index(graphs, s.graph), slices.Index(rests, s.rest)
		l.Color, pts.Color = palette(ri), palette(ri)
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
	// Room on the right for the legend.
	p.X.Min, p.X.Max = 0, maxX*1.6
	p.Legend.Top = true
	return figure{name: "hitrate", plots: []*plot.Plot{p}, w: 8 * vg.Inch, h: 5 * vg.Inch}, true
}

// sweepAxis is the sweep key a hit-rate figure puts on its x axis:
// cache.size when swept, else the first key whose values are all numbers.
func sweepAxis(sweep []benchSweep) string {
	numeric := func(s benchSweep) bool {
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

// lossFigure draws each run's training loss per batch. Runs whose curves
// are identical (exact graphs on the same data) share one line.
func lossFigure(runs []reportRun) (figure, bool) {
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
