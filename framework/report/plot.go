package report

import (
	"image/color"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	_ "gonum.org/v1/plot/vg/vgimg" // png
	_ "gonum.org/v1/plot/vg/vgsvg" // svg
)

// figure is one image: plots side by side, in inches.
type figure struct {
	name  string
	plots []*plot.Plot
	w, h  vg.Length
}

// save draws the figure's plots side by side into a file at path in
// format ext.
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
