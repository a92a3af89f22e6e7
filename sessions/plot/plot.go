// Package plot draws perflab's results as SVG or PNG figures with
// gonum.org/v1/plot: a session's trial values by trial index coloured by
// arm (order and control toggles marked), each arm's distribution, Δ% of
// medians with its confidence interval per metric, and MFLOPS over time;
// the stability check's MFLOPS; validation rates and the trial trend;
// the order study's fixed- against random-order medians.
package plot

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure is a grid of plots drawn onto one image, two per row.
type Figure struct {
	Plots []*plot.Plot
}

// panelW and panelH are one panel's size.
const (
	panelW = 6 * vg.Inch
	panelH = 3.6 * vg.Inch
)

// Save writes the figure to path, as SVG or PNG by its extension.
func (f *Figure) Save(path string) error {
	var format string
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg":
		format = "svg"
	case ".png":
		format = "png"
	default:
		return fmt.Errorf("%s: plot file must end in .svg or .png", path)
	}
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := f.Write(file, format); err != nil {
		file.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return file.Close()
}

// Write draws the figure to w as "svg" or "png".
func (f *Figure) Write(w io.Writer, format string) error {
	if len(f.Plots) == 0 {
		return fmt.Errorf("nothing to plot")
	}
	cols := 2
	if len(f.Plots) == 1 {
		cols = 1
	}
	rows := (len(f.Plots) + cols - 1) / cols
	width, height := panelW*vg.Length(cols), panelH*vg.Length(rows)
	var canvas vg.CanvasWriterTo
	switch format {
	case "svg":
		canvas = vgsvg.New(width, height)
	case "png":
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(110))}
	default:
		return fmt.Errorf("unknown plot format %q (svg or png)", format)
	}
	dc := draw.New(canvas)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	for i, p := range f.Plots {
		grid[i/cols][i%cols] = p
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 6, PadY: vg.Millimeter * 6,
		PadTop: vg.Millimeter * 3, PadBottom: vg.Millimeter * 3, PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 3}
	canvases := plot.Align(grid, tiles, dc)
	for j := range grid {
		for i, p := range grid[j] {
			if p != nil {
				p.Draw(canvases[j][i])
			}
		}
	}
	_, err := canvas.WriteTo(w)
	return err
}

// Colours: the control blue, the treatment orange, further builds after
// them (Okabe–Ito, readable with colour blindness).
var palette = []color.RGBA{
	{0, 114, 178, 255},   // blue
	{230, 159, 0, 255},   // orange
	{0, 158, 115, 255},   // green
	{204, 121, 167, 255}, // purple
	{86, 180, 233, 255},  // sky
	{213, 94, 0, 255},    // vermilion
	{120, 120, 120, 255}, // grey
}

// Verdict colours.
var (
	red   = color.RGBA{200, 30, 30, 255}
	green = color.RGBA{0, 140, 60, 255}
	grey  = color.RGBA{110, 110, 110, 255}
	light = color.RGBA{200, 200, 200, 255}
)

// armColor is the colour of the i-th build.
func armColor(i int) color.Color { return palette[i%len(palette)] }

// newPlot makes a plot with a title, axis labels and a grid.
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

// hline draws a horizontal line at y across [x0, x1].
func hline(p *plot.Plot, y, x0, x1 float64, c color.Color, dashed bool) {
	l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: y}, {X: x1, Y: y}})
	if err != nil {
		return
	}
	l.Color = c
	l.Width = vg.Points(1)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(l)
}

// padRange sets the axis to [lo, hi] widened by frac of its span below
// and by top of it above (room for the legend), at least ±1 around a
// constant.
func padRange(a *plot.Axis, lo, hi, frac, top float64) {
	if !finite(lo) || !finite(hi) {
		return
	}
	span := hi - lo
	if span == 0 {
		span = math.Max(math.Abs(hi)*0.01, 1)
	}
	a.Min, a.Max = lo-frac*span, hi+top*span
}

// vline draws a vertical dashed line at x across [y0, y1].
func vline(p *plot.Plot, x, y0, y1 float64, c color.Color) *plotter.Line {
	l, err := plotter.NewLine(plotter.XYs{{X: x, Y: y0}, {X: x, Y: y1}})
	if err != nil {
		return nil
	}
	l.Color = c
	l.Width = vg.Points(1)
	l.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
	p.Add(l)
	return l
}

// intervals draws points with vertical error bars at x = 0, 1, ...,
// named on the x axis, each in its own colour.
type interval struct {
	Name             string
	Point, Low, High float64
	Color            color.Color
}

func drawIntervals(p *plot.Plot, iv []interval) {
	var names []string
	for i, v := range iv {
		names = append(names, v.Name)
		if !finite(v.Point) {
			continue
		}
		pt := plotter.XYs{{X: float64(i), Y: v.Point}}
		s, err := plotter.NewScatter(pt)
		if err != nil {
			continue
		}
		s.GlyphStyle.Color = v.Color
		s.GlyphStyle.Shape = draw.CircleGlyph{}
		s.GlyphStyle.Radius = vg.Points(3.5)
		p.Add(s)
		if finite(v.Low) && finite(v.High) {
			eb, err := plotter.NewYErrorBars(errPoints{pt, plotter.YErrors{{Low: v.Point - v.Low, High: v.High - v.Point}}})
			if err == nil {
				eb.Color = v.Color
				eb.Width = vg.Points(1.5)
				eb.CapWidth = vg.Points(10)
				p.Add(eb)
			}
		}
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(iv))-0.4
	if p.Y.Max >= p.Y.Min {
		padRange(&p.Y, p.Y.Min, p.Y.Max, 0.08, 0.08)
	}
}

// errPoints is points with vertical error bars.
type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// shorten cuts s to n runes with an ellipsis.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
