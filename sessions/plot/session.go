package plot

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
)

// maxMetrics bounds how many metrics get their own trial and distribution
// panels; Δ% covers all of them.
const maxMetrics = 3

// Session draws a session and its report: for each metric (the first
// three) the counted trials' values by trial index coloured by arm, with
// toggles (order, controls, pause) marked at the round they took effect,
// and each arm's distribution; then Δ% of medians with its confidence
// interval for every metric, coloured by verdict; and, when the session
// holds probe samples, MFLOPS over time.
func Session(s *sessions.Session, rep analysis.Report) (*Figure, error) {
	return SessionVersus(s, []analysis.Report{rep})
}

// SessionVersus is Session for a session of more than two builds: reps
// compare each build after the base with it (analysis.Versus's
// comparisons), and the Δ% panel has an interval per metric and build.
func SessionVersus(s *sessions.Session, reps []analysis.Report) (*Figure, error) {
	if len(reps) == 0 {
		return nil, fmt.Errorf("session %s: nothing compared to plot", s.Header.ID)
	}
	rep := reps[0]
	arms := sessionArms(s)
	if len(arms) == 0 {
		return nil, fmt.Errorf("session %s has no counted trials to plot", s.Header.ID)
	}
	f := &Figure{}
	for i, m := range rep.Metrics {
		if i == maxMetrics {
			break
		}
		f.Plots = append(f.Plots, trialsPlot(s, arms, m), distributionPlot(s, arms, m))
	}
	if len(reps) == 1 {
		f.Plots = append(f.Plots, DeltaPlot(rep))
	} else {
		f.Plots = append(f.Plots, deltaVersusPlot(reps))
	}
	var probe []lab.ProbeSample
	for _, e := range s.Events {
		if e.Type == lab.EventProbe && e.Probe != nil {
			probe = append(probe, *e.Probe)
		}
	}
	if len(probe) > 0 {
		f.Plots = append(f.Plots, MFLOPSPlot(probe, "stability check before the trials"))
	}
	return f, nil
}

// arm is one build of a session, for legends.
type arm struct {
	key, label string
}

// sessionArms lists the arms with counted trials, control and treatment
// first, each labelled with its build's name when it has one.
func sessionArms(s *sessions.Session) []arm {
	seen := map[string]string{}
	for _, e := range s.Events {
		if t := e.Trial; e.Type == lab.EventTrial && t != nil && t.Counted() {
			seen[t.Arm] = t.Build
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	rank := func(k string) int {
		switch k {
		case lab.ArmControl:
			return 0
		case lab.ArmTreatment:
			return 1
		}
		return 2
	}
	sort.Slice(keys, func(i, j int) bool {
		if rank(keys[i]) != rank(keys[j]) {
			return rank(keys[i]) < rank(keys[j])
		}
		return keys[i] < keys[j]
	})
	out := make([]arm, len(keys))
	for i, k := range keys {
		name := s.Header.Plan.Builds[k].Name
		if name == "" && seen[k] != k {
			name = seen[k]
		}
		label := k
		if name != "" && name != k {
			label = k + " (" + shorten(name, 24) + ")"
		}
		out[i] = arm{k, label}
	}
	return out
}

// values returns each arm's (trial index, value) of metric m.
func values(s *sessions.Session, armKey string, m analysis.MetricResult) plotter.XYs {
	var xys plotter.XYs
	for _, e := range s.Events {
		t := e.Trial
		if e.Type != lab.EventTrial || t == nil || t.Arm != armKey || !t.Counted() {
			continue
		}
		for _, mv := range t.Metrics {
			if mv.Name == m.Name && finite(mv.Value) {
				xys = append(xys, plotter.XY{X: float64(t.Index), Y: mv.Value})
			}
		}
	}
	return xys
}

func metricLabel(m analysis.MetricResult) string {
	if m.Unit == "" {
		return m.Name
	}
	return m.Name + " (" + m.Unit + ")"
}

// trialsPlot draws metric m's values by trial index, one colour per arm,
// with every toggle as a dashed vertical line labelled with what changed.
func trialsPlot(s *sessions.Session, arms []arm, m analysis.MetricResult) *plot.Plot {
	p := newPlot(m.Name+" by trial", "trial index (as in the CSV export)", metricLabel(m))
	ymin, ymax := math.Inf(1), math.Inf(-1)
	xmin, xmax := ymin, ymax
	for i, a := range arms {
		xys := values(s, a.key, m)
		if len(xys) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			continue
		}
		sc.GlyphStyle.Color = armColor(i)
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		sc.GlyphStyle.Radius = vg.Points(2.2)
		p.Add(sc)
		p.Legend.Add(a.label, sc)
		x0, x1, lo, hi := plotter.XYRange(xys)
		ymin, ymax = math.Min(ymin, lo), math.Max(ymax, hi)
		xmin, xmax = math.Min(xmin, x0), math.Max(xmax, x1)
	}
	if !finite(ymin) {
		return p
	}
	padRange(&p.Y, ymin, ymax, 0.05, 0.3)
	padRange(&p.X, xmin, xmax, 0.02, 0.02)
	// Each toggle takes effect from its round on: mark it before the first
	// trial of that round.
	first := map[int]int{}
	for _, e := range s.Events {
		if t := e.Trial; e.Type == lab.EventTrial && t != nil {
			if _, ok := first[t.Round]; !ok {
				first[t.Round] = t.Index
			}
		}
	}
	var labels plotter.XYLabels
	marked := false
	for _, e := range s.Events {
		tg := e.Toggle
		if e.Type != lab.EventToggle || tg == nil {
			continue
		}
		idx, ok := first[tg.Round]
		if !ok {
			continue
		}
		x := float64(idx) - 0.5
		if l := vline(p, x, ymin, ymax, grey); l != nil && !marked {
			p.Legend.Add("toggle", l)
			marked = true
		}
		labels.XYs = append(labels.XYs, plotter.XY{X: x, Y: ymax})
		labels.Labels = append(labels.Labels, toggleText(*tg))
	}
	if len(labels.XYs) > 0 {
		if l, err := plotter.NewLabels(labels); err == nil {
			for i := range l.TextStyle {
				l.TextStyle[i].Color = grey
				l.TextStyle[i].Rotation = math.Pi / 2
				l.TextStyle[i].XAlign = draw.XRight
				l.TextStyle[i].YAlign = draw.YTop
			}
			p.Add(l)
		}
	}
	return p
}

// toggleText says what a toggle changed: "order→fixed", "kill_app on".
func toggleText(t lab.Toggle) string {
	switch t.What {
	case "pause", "resume":
		return t.What
	case "order":
		return "order→" + t.To
	}
	return t.What + " " + t.To
}

// distributionPlot draws each arm's box plot of metric m with the values
// beside it.
func distributionPlot(s *sessions.Session, arms []arm, m analysis.MetricResult) *plot.Plot {
	p := newPlot(m.Name+" per arm", "", metricLabel(m))
	var names []string
	for i, a := range arms {
		names = append(names, a.label)
		xys := values(s, a.key, m)
		if len(xys) == 0 {
			continue
		}
		vals := make(plotter.Values, len(xys))
		for j, xy := range xys {
			vals[j] = xy.Y
		}
		b, err := plotter.NewBoxPlot(vg.Points(40), float64(i), vals)
		if err != nil {
			continue
		}
		b.FillColor = fade(armColor(i))
		b.BoxStyle.Color = armColor(i)
		b.MedianStyle.Color = armColor(i)
		b.MedianStyle.Width = vg.Points(2)
		b.WhiskerStyle.Color = armColor(i)
		b.GlyphStyle.Color = armColor(i)
		p.Add(b)
		// The values themselves, jittered deterministically to the right.
		pts := make(plotter.XYs, len(vals))
		for j, v := range vals {
			pts[j] = plotter.XY{X: float64(i) + 0.28 + 0.12*float64(j%7)/6, Y: v}
		}
		if sc, err := plotter.NewScatter(pts); err == nil {
			sc.GlyphStyle.Color = armColor(i)
			sc.GlyphStyle.Radius = vg.Points(1.4)
			sc.GlyphStyle.Shape = draw.CircleGlyph{}
			p.Add(sc)
		}
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(arms))-0.3
	if lo, hi := p.Y.Min, p.Y.Max; hi >= lo {
		padRange(&p.Y, lo, hi, 0.05, 0.05)
	}
	return p
}

// fade is c mixed with white, for box fills.
func fade(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8((v>>8)/3 + 255*2/3) }
	return color.RGBA{mix(r), mix(g), mix(b), 255}
}

// DeltaPlot draws, per metric, the Δ% (B vs A) its verdict rests on with
// that interval (Decision), red for a regression, green for an improvement,
// grey otherwise, around a zero line.
func DeltaPlot(rep analysis.Report) *plot.Plot {
	title := fmt.Sprintf("Δ%% B vs A the verdict rests on, %.0f%% CI", rep.Confidence*100)
	var iv []interval
	for _, m := range rep.Metrics {
		iv = append(iv, deltaInterval(m, shorten(m.Name, 22)))
	}
	return intervalsPlot(title, iv)
}

// deltaVersusPlot is DeltaPlot for several builds against the base: an
// interval per metric and build, named "metric C".
func deltaVersusPlot(reps []analysis.Report) *plot.Plot {
	title := fmt.Sprintf("Δ%% each build vs A the verdict rests on, %.0f%% CI", reps[0].Confidence*100)
	var iv []interval
	for i, m := range reps[0].Metrics {
		for j, r := range reps {
			if i < len(r.Metrics) {
				iv = append(iv, deltaInterval(r.Metrics[i], shorten(m.Name, 20)+" "+string(rune('B'+j))))
			}
		}
	}
	return intervalsPlot(title, iv)
}

// deltaInterval is the Δ% one metric's verdict rests on with that
// interval (Decision), red for a regression, green for an improvement,
// grey otherwise.
func deltaInterval(m analysis.MetricResult, name string) interval {
	c := color.Color(grey)
	switch m.Verdict {
	case analysis.VerdictRegression:
		c = red
	case analysis.VerdictImprovement:
		c = green
	}
	return interval{Name: name + "\n" + m.Verdict, Point: float64(m.Decision.DeltaPct),
		Low: float64(m.Decision.CILowPct), High: float64(m.Decision.CIHighPct), Color: c}
}

// intervalsPlot draws intervals around a zero line.
func intervalsPlot(title string, iv []interval) *plot.Plot {
	p := newPlot(title, "", "Δ (%)")
	drawIntervals(p, iv)
	hline(p, 0, p.X.Min, p.X.Max, grey, false)
	padRange(&p.Y, math.Min(p.Y.Min, 0), math.Max(p.Y.Max, 0), 0.1, 0.1)
	return p
}

// MFLOPSPlot draws probe throughput over time with its mean and a ±2%
// band (the check's CV limit).
func MFLOPSPlot(samples []lab.ProbeSample, title string) *plot.Plot {
	p := newPlot("MFLOPS: "+title, "time (s)", "MFLOPS")
	xys := make(plotter.XYs, 0, len(samples))
	sum := 0.0
	for _, s := range samples {
		if finite(s.MFLOPS) {
			xys = append(xys, plotter.XY{X: s.T, Y: s.MFLOPS})
			sum += s.MFLOPS
		}
	}
	if len(xys) == 0 {
		return p
	}
	mean := sum / float64(len(xys))
	x0, x1 := xys[0].X, xys[len(xys)-1].X
	// A fixed band of ±5% around the mean, widened only to fit the data,
	// so that noise of a fraction of a percent looks like what it is.
	_, _, lo, hi := plotter.XYRange(xys)
	p.Y.Min, p.Y.Max = math.Min(mean*0.95, lo), math.Max(mean*1.05, hi)
	for _, k := range []float64{0.98, 1.02} {
		hline(p, mean*k, x0, x1, light, true)
	}
	hline(p, mean, x0, x1, grey, false)
	if l, err := plotter.NewLine(xys); err == nil {
		l.Color = palette[0]
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add("MFLOPS", l)
	}
	if l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: mean}, {X: x1, Y: mean}}); err == nil {
		l.Color = grey
		p.Legend.Add(fmt.Sprintf("mean %.0f", mean), l)
	}
	if l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: mean * 0.98}}); err == nil {
		l.Color = light
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Legend.Add("mean ±2%", l)
	}
	return p
}

// Check draws a stability check's MFLOPS over time; title says which
// device and what verdict.
func Check(samples []lab.ProbeSample, title string) *Figure {
	return &Figure{Plots: []*plot.Plot{MFLOPSPlot(samples, title)}}
}
