package plot

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/sessions/study"
)

// Validation draws a validation study: the A/A false-positive rate and,
// with an effect, the detection rate, each with its Clopper–Pearson
// interval, against α and the 80% power target; and MobileLab's mean
// metric by trial number across the A/A experiments.
func Validation(v *study.Validation) *Figure {
	p := newPlot(fmt.Sprintf("%s on %s: rates with %.0f%% CI", v.Metric, v.Device, v.Confidence*100), "", "rate (%)")
	iv := []interval{{
		Name:  fmt.Sprintf("A/A false positives\n%d of %d", v.AA.FalsePositives, v.AA.Experiments),
		Point: 100 * float64(v.AA.Rate), Low: 100 * float64(v.AA.CILow), High: 100 * float64(v.AA.CIHigh), Color: palette[0],
	}}
	if v.Effect.Experiments > 0 {
		iv = append(iv, interval{
			Name:  fmt.Sprintf("detected %+g%%\n%d of %d", v.Effect.EffectPct, v.Effect.Detected, v.Effect.Experiments),
			Point: 100 * float64(v.Effect.Rate), Low: 100 * float64(v.Effect.CILow), High: 100 * float64(v.Effect.CIHigh), Color: palette[1],
		})
	}
	drawIntervals(p, iv)
	p.Y.Min, p.Y.Max = 0, 100
	hline(p, 100*v.Alpha, p.X.Min, p.X.Max, red, true)
	if l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}}); err == nil {
		l.Color, l.Dashes = red, []vg.Length{vg.Points(4), vg.Points(3)}
		p.Legend.Add(fmt.Sprintf("α = %g", v.Alpha), l)
	}
	if v.Effect.Experiments > 0 {
		hline(p, 100*analysis.PowerTarget, p.X.Min, p.X.Max, green, true)
		if l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}}); err == nil {
			l.Color, l.Dashes = green, []vg.Length{vg.Points(4), vg.Points(3)}
			p.Legend.Add(fmt.Sprintf("%.0f%% power", 100*analysis.PowerTarget), l)
		}
	}
	f := &Figure{Plots: []*plot.Plot{p}}
	var xys plotter.XYs
	for k, m := range v.TrialTrend.Means {
		if finite(float64(m)) {
			xys = append(xys, plotter.XY{X: float64(k + 1), Y: 100 * (float64(m) - 1)}) // m is value/experiment mean
		}
	}
	if len(xys) > 0 {
		t := newPlot(fmt.Sprintf("mean by trial number (A/A), Spearman ρ %s", format.Text.Digits(v.TrialTrend.Rho, 3)),
			"counted trial", "vs experiment mean (%)")
		if l, s, err := plotter.NewLinePoints(xys); err == nil {
			l.Color, s.GlyphStyle.Color = palette[0], palette[0]
			s.GlyphStyle.Shape, s.GlyphStyle.Radius = draw.CircleGlyph{}, vg.Points(2)
			t.Add(l, s)
		}
		hline(t, 0, xys[0].X, xys[len(xys)-1].X, light, false)
		f.Plots = append(f.Plots, t)
	}
	return f
}

// Order draws an order study: for each build × metric test, the median of
// the per-run means in fixed order and in random order with their
// distribution-free intervals, red-flagged tests in red.
func Order(o *study.Order) *Figure {
	f := &Figure{}
	for _, t := range o.Tests {
		title := fmt.Sprintf("%s: fixed vs random order, p %s", t.Name, format.Text.P(t.P, o.AlphaBonferroni))
		if t.RedFlag {
			title += " — RED FLAG"
		}
		p := newPlot(title, "", t.Metric+" (median of run means)")
		c := color.Color(palette[0])
		if t.RedFlag {
			c = red
		}
		drawIntervals(p, []interval{
			{Name: "fixed", Point: float64(t.Fixed.Point), Low: float64(t.Fixed.Low), High: float64(t.Fixed.High), Color: c},
			{Name: "random", Point: float64(t.Random.Point), Low: float64(t.Random.Low), High: float64(t.Random.High), Color: palette[1]},
		})
		f.Plots = append(f.Plots, p)
	}
	return f
}
