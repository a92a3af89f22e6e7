package plot

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// SeriesMark is a build of a history series to mark: a change point (a
// grey dashed line before its first build) or an alert (red when
// confirmed, else orange).
type SeriesMark struct {
	Index     int
	Alert     bool
	Confirmed bool
}

// Series draws a history series (perflab serve): its builds' medians
// over the builds in order, the change points and alerts marked, the
// first, marked and last builds named on the x axis.
func Series(title, unit string, values []float64, builds []string, marks []SeriesMark) (*Figure, error) {
	if len(values) == 0 {
		return nil, fmt.Errorf("an empty series")
	}
	p := newPlot(title, "build", unit)
	p.Legend.Top = true
	pts := envelope(values, maxSeriesPoints)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range pts {
		lo, hi = min(lo, p.Y), max(hi, p.Y)
	}
	line, points, err := plotter.NewLinePoints(pts)
	if err != nil {
		return nil, err
	}
	line.Color, line.Width = armColor(0), vg.Points(1)
	points.GlyphStyle.Color, points.GlyphStyle.Radius = armColor(0), vg.Points(1.5)
	if len(values) > 300 {
		points.GlyphStyle.Radius = 0
	}
	p.Add(line, points)
	padRange(&p.Y, lo, hi, 0.08, 0.15)
	named := map[int]bool{0: true, len(values) - 1: true}
	for _, m := range marks {
		if m.Index < 0 || m.Index >= len(values) {
			continue
		}
		named[m.Index] = true
		if !m.Alert {
			vline(p, float64(m.Index)-0.5, p.Y.Min, p.Y.Max, grey)
			continue
		}
		c := palette[1]
		if m.Confirmed {
			c = red
		}
		s, err := plotter.NewScatter(plotter.XYs{{X: float64(m.Index), Y: values[m.Index]}})
		if err == nil {
			s.GlyphStyle.Color, s.GlyphStyle.Shape, s.GlyphStyle.Radius = c, draw.TriangleGlyph{}, vg.Points(5)
			p.Add(s)
		}
	}
	var ticks plot.ConstantTicks
	for i := range values {
		if named[i] && i < len(builds) {
			ticks = append(ticks, plot.Tick{Value: float64(i), Label: shorten(builds[i], 12)})
		}
	}
	p.X.Tick.Marker = ticks
	p.X.Min, p.X.Max = -0.5, float64(len(values))-0.5
	return &Figure{Plots: []*plot.Plot{p}}, nil
}

// maxSeriesPoints is the most points a series chart draws: a longer series
// is drawn as the envelope of its buckets (each bucket's lowest and
// highest build, in build order), which keeps every step and spike
// visible and the SVG small.
const maxSeriesPoints = 1000

// envelope is values' finite points, or past limit of them the lowest
// and highest of each of limit/2 buckets of builds.
func envelope(values []float64, limit int) plotter.XYs {
	var pts plotter.XYs
	if len(values) <= limit {
		for i, v := range values {
			if finite(v) {
				pts = append(pts, plotter.XY{X: float64(i), Y: v})
			}
		}
		return pts
	}
	buckets := limit / 2
	for b := range buckets {
		from, to := b*len(values)/buckets, (b+1)*len(values)/buckets
		lo, hi := -1, -1
		for i := from; i < to; i++ {
			if !finite(values[i]) {
				continue
			}
			if lo < 0 || values[i] < values[lo] {
				lo = i
			}
			if hi < 0 || values[i] > values[hi] {
				hi = i
			}
		}
		if lo < 0 {
			continue
		}
		first := min(lo, hi)
		pts = append(pts, plotter.XY{X: float64(first), Y: values[first]})
		if lo != hi {
			second := max(lo, hi)
			pts = append(pts, plotter.XY{X: float64(second), Y: values[second]})
		}
	}
	return pts
}
