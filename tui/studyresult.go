package tui

import (
	"fmt"
	"math"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/guptarohit/asciigraph"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/sessions/study"
)

// plotLines draws series with asciigraph in a w × h area (h lines of
// plot, x-axis labels left of it). Fewer points than columns are drawn one
// per column; more are resampled to fit.
func plotLines(series [][]float64, w, h int, precision uint) []string {
	if h < 2 || w < 24 || len(series) == 0 || len(series[0]) == 0 {
		return nil
	}
	width := w - 12
	data := make([][]float64, len(series))
	for i, s := range series {
		if len(s) == 1 {
			s = []float64{s[0], s[0]}
		}
		data[i] = s
	}
	opts := []asciigraph.Option{asciigraph.Height(h), asciigraph.Precision(precision)}
	if len(data[0]) > width {
		opts = append(opts, asciigraph.Width(width))
	}
	var lines []string
	for _, l := range strings.Split(asciigraph.PlotMany(data, opts...), "\n") {
		lines = append(lines, truncate(l, w))
	}
	return lines
}

// studyResult is the part of the study dashboard that draws a finished
// study's result: a validationView or an orderView.
type studyResult interface {
	View() string
	SetSize(w, h int)
}

// validationView draws a validation's result: the facts of perflab
// validate's report, with the failures and warnings coloured.
type validationView struct {
	st            *Styles
	v             *study.Validation
	width, height int
}

// SetSize sets the area of the result.
func (r *validationView) SetSize(w, h int) { r.width, r.height = w, h }

// View draws the result.
func (r *validationView) View() string { return strings.Join(r.lines(r.width, r.height), "\n") }

func (r *validationView) lines(w, h int) []string {
	st := r.st
	v := r.v
	unit := ""
	if v.Unit != "" {
		unit = " " + v.Unit
	}
	lines := wrapped(st.PanelTitle, fmt.Sprintf("%s (%s is better) · %s test · α = %g · %d trials/arm · order %s",
		v.Metric, v.Better, v.Test, v.Alpha, v.TrialsPerArm, v.Order), w)
	fp := fmt.Sprintf("A/A false positives  %d of %d = %s  %.0f%% CI %s–%s  ", v.AA.FalsePositives, v.AA.Experiments,
		format.Rate(v.AA.Rate), 100*v.Confidence, format.Rate(v.AA.CILow), format.Rate(v.AA.CIHigh))
	switch j := v.AlphaJudgement(); j {
	case analysis.AlphaExcluded:
		fp += st.Regression.Render(j)
	case analysis.AlphaTooFew:
		fp += st.Warning.Render(j)
	default:
		fp += st.OK.Render(j)
	}
	if v.AA.Failed > 0 {
		fp += st.Warning.Render(fmt.Sprintf("  (%d failed)", v.AA.Failed))
	}
	lines = append(lines, truncate(fp, w))
	if e := v.Effect; e.Experiments > 0 {
		how := "declared"
		if e.Injected {
			how = "injected"
		}
		s := fmt.Sprintf("%-21s", fmt.Sprintf("effect %+g%% %s", e.EffectPct, how))
		s += fmt.Sprintf("detected %d of %d = %s  CI %s–%s  ", e.Detected, e.Experiments, format.Rate(e.Rate), format.Rate(e.CILow), format.Rate(e.CIHigh))
		if v.Underpowered() {
			s += st.Regression.Render(v.PowerLabel())
		} else {
			s += st.OK.Render(v.PowerLabel())
		}
		obs := fmt.Sprintf("%21sobserved Δ %+.2f%% of the mean", "", float64(e.ObservedPct))
		if e.Wrong > 0 {
			obs += st.Warning.Render(fmt.Sprintf(" · %d significant in the wrong direction", e.Wrong))
		}
		if e.Failed > 0 {
			obs += st.Warning.Render(fmt.Sprintf(" · %d failed", e.Failed))
		}
		lines = append(lines, truncate(s, w), truncate(obs, w))
	} else {
		lines = append(lines, st.Muted.Render(truncate("effect               not run (set a known effect in the stepper)", w)))
	}
	for _, arm := range []struct {
		name string
		a    study.ArmVariance
	}{{"control  ", v.Variance.Control}, {"treatment", v.Variance.Treatment}} {
		lines = append(lines, truncate(fmt.Sprintf("variance, %s  %s%s²  sd %s%s  CV %s  mean %s%s", arm.name,
			format.Num(arm.a.Variance), unit, format.Num(arm.a.SD), unit, format.Rate(arm.a.CV), format.Num(arm.a.Mean), unit), w))
	}
	tt := v.TrialTrend
	trend := fmt.Sprintf("trial-number trend   ρ = %s  p = %s  over %d positions  ", format.Num(tt.Rho), format.P(tt.P, v.Alpha), len(tt.Means))
	if tt.P.Defined() && float64(tt.P) < v.Alpha {
		trend += st.Regression.Render("TREND: not IID")
	} else {
		trend += st.OK.Render("no trend")
	}
	lines = append(lines, truncate(trend, w))
	for _, m := range v.OtherMetrics {
		lines = append(lines, st.Muted.Render(truncate(fmt.Sprintf("A/A false positives of %s: %d of %d = %s", m.Metric, m.FalsePositives, m.Experiments, format.Rate(m.Rate)), w)))
	}
	var tail []string
	for _, s := range v.Warnings {
		tail = append(tail, wrapped(st.Warning, "⚠ "+s, w)...)
	}
	if v.Failed() {
		tail = append(tail, wrapped(st.Regression, "✗ the setup does not validate: do not trust its verdicts as they stand", w)...)
	} else {
		ok := "✓ the setup validates: false positives hold α"
		if v.Effect.Experiments > 0 {
			ok += " and the known effect is found"
		}
		tail = append(tail, wrapped(st.OK, ok, w)...)
	}
	// The chart takes the room left between the facts and the verdict.
	if room := h - len(lines) - len(tail) - 2; room >= 5 && len(tt.Means) > 1 {
		means := make([]float64, len(tt.Means))
		for i, m := range tt.Means {
			means[i] = math.NaN()
			if m.Defined() {
				means[i] = 100 * (float64(m) - 1)
			}
		}
		lines = append(lines, "", st.PanelTitle.Render(truncate("mean by trial number, % off each experiment's mean (first trial left)", w)))
		lines = append(lines, plotLines([][]float64{means}, w, min(10, room-2), 2)...)
	}
	return append(append(lines, ""), tail...)
}

// orderView draws an order study's result: the facts of perflab order's
// report, red flags and the conclusion coloured.
type orderView struct {
	st            *Styles
	o             *study.Order
	width, height int
}

// SetSize sets the area of the result.
func (r *orderView) SetSize(w, h int) { r.width, r.height = w, h }

// View draws the result.
func (r *orderView) View() string { return strings.Join(r.lines(r.width), "\n") }

func (r *orderView) lines(w int) []string {
	st := r.st
	o := r.o
	lines := wrapped(st.PanelTitle, fmt.Sprintf("Order dependence: %d repetitions, %d trials/arm, α = %g, Bonferroni α = %.3g over %d tests",
		o.Runs, o.TrialsPerArm, o.Alpha, o.AlphaBonferroni, len(o.Tests)), w)
	// Columns are sized to their widest cell, so a narrow screen cuts only
	// the last one.
	marks := make([]string, len(o.Tests))
	rows := [][]string{{"test", "p (KW)", "Δ% f−r", "", "median fixed [CI]", "median random [CI]"}}
	ci := func(iv analysis.Interval) string {
		return fmt.Sprintf("%s [%s, %s]", format.Num(iv.Point), format.Num(iv.Low), format.Num(iv.High))
	}
	for i, t := range o.Tests {
		switch {
		case t.RedFlag && t.Significant:
			marks[i] = "matters RED FLAG"
		case t.RedFlag:
			marks[i] = "RED FLAG"
		case t.Significant:
			marks[i] = "order matters"
		}
		rows = append(rows, []string{t.Name, format.P(t.P, o.AlphaBonferroni), format.SignedPct(t.DeltaPct), marks[i], ci(t.Fixed), ci(t.Random)})
	}
	// Too wide for the screen: the medians go on a line of their own under
	// each test rather than being cut.
	split := false
	for _, l := range table(rows) {
		split = split || lipgloss.Width(l) > w
	}
	if split {
		for i := range rows {
			rows[i] = rows[i][:4]
		}
	}
	for i, cells := range table(rows) {
		style := st.Muted
		switch {
		case i == 0:
			cells = st.Header.Render(cells)
		case marks[i-1] != "":
			cells, style = st.Regression.Render(cells), st.Regression
		}
		lines = append(lines, truncate(cells, w))
		if split && i > 0 {
			t := o.Tests[i-1]
			lines = append(lines, wrapped(style, "  median fixed "+ci(t.Fixed)+" · random "+ci(t.Random), w)...)
		}
	}
	if len(o.Conclusions) > 0 {
		lines = append(lines, "", st.PanelTitle.Render("A/B conclusion by order"))
		for _, c := range o.Conclusions {
			row := fmt.Sprintf("  %s: fixed %s (Δ %s), random %s (Δ %s)", c.Metric, c.Fixed, format.SignedPct(c.DeltaPctFixed), c.Random, format.SignedPct(c.DeltaPctRandom))
			switch {
			case c.RedFlag:
				row = st.Regression.Render("≠" + row[1:] + " · differ")
			case c.Fixed != c.Random:
				row = st.Warning.Render("≠" + row[1:] + " · differ (per-run Δ agree)")
			}
			lines = append(lines, truncate(row, w))
		}
	}
	lines = append(lines, "")
	for _, t := range o.Tests {
		for _, r := range t.Reasons {
			lines = append(lines, wrapped(st.Warning, t.Name+": "+r, w)...)
		}
	}
	switch {
	case o.OrderMatters:
		lines = append(lines, wrapped(st.Regression, "✗ Order matters: fixed and random orders give different results. Use random order (and a fuller reset procedure).", w)...)
	case o.Underpowered:
		lines = append(lines, wrapped(st.Warning, "? Inconclusive: too few repetitions for any test to reach significance.", w)...)
	default:
		lines = append(lines, wrapped(st.OK, "✓ Order likely does not matter: no test differs between fixed and random order.", w)...)
	}
	for _, s := range o.Warnings {
		lines = append(lines, wrapped(st.Warning, "⚠ "+s, w)...)
	}
	if o.Failed > 0 {
		lines = append(lines, st.Warning.Render(truncate(fmt.Sprintf("⚠ %d runs failed", o.Failed), w)))
	}
	return lines
}

// wrapped breaks text into at most three lines of width w in style s.
func wrapped(s lipgloss.Style, text string, w int) []string {
	lines := wrapWords(text, w, 3)
	for i, l := range lines {
		lines[i] = s.Render(l)
	}
	return lines
}

// table aligns rows of cells into columns two spaces apart, each as wide
// as its widest cell; empty columns vanish.
func table(rows [][]string) []string {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], lipgloss.Width(c))
		}
	}
	out := make([]string, len(rows))
	for k, r := range rows {
		var b strings.Builder
		for i, c := range r {
			if widths[i] == 0 {
				continue
			}
			if b.Len() > 0 {
				b.WriteString("  ")
			}
			b.WriteString(c + strings.Repeat(" ", widths[i]-lipgloss.Width(c)))
		}
		out[k] = strings.TrimRight(b.String(), " ")
	}
	return out
}
