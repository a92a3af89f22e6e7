package tui

import (
	"fmt"
	"math"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/perflab/perflab/analysis"
)

// The analysis panes draw the analysis a dashboard shows: the Δ% and its
// CI (ciPane), the anytime-valid numbers (seqPane), the p-values (pPane)
// and the regimes (regimePane). Each is a component: it keeps the last
// analysis handed to it by an analysisShownMsg, is given its area with
// SetSize (a width and the metric rows it may use) and draws itself with
// View. None has keys.

// analysisShownMsg hands the analysis panes the analysis their dashboard
// now shows. A dashboard sends it to its own panes; it never goes through
// the program.
type analysisShownMsg struct{ panel panelData }

// viewLines splits a pane's View into lines; an empty view has none.
func viewLines(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, "\n")
}

// analysisView is what every analysis pane keeps: the analysis shown and
// the area it is given.
type analysisView struct {
	st    *Styles
	data  panelData
	width int
	rows  int // metric (or regime) rows drawn
	off   int // the first metric drawn (the dashboard scrolls them)
}

// SetSize sets the width and the number of rows.
func (v *analysisView) SetSize(w, rows int) { v.width, v.rows = w, rows }

// SetOffset sets the first metric drawn.
func (v *analysisView) SetOffset(off int) { v.off = max(off, 0) }

// shown is the range of metrics drawn: from the offset, as many as the
// rows (all when they fit).
func (v *analysisView) shown() (from, to int) {
	n := len(v.data.metrics)
	if n <= v.rows {
		return 0, n
	}
	from = min(v.off, n-v.rows)
	return from, from + v.rows
}

// moreLine says which metrics are shown when they do not all fit, and
// how to see the rest; "" when they fit.
func (v *analysisView) moreLine() string {
	from, to := v.shown()
	n := len(v.data.metrics)
	if from == 0 && to == n {
		return ""
	}
	return v.st.Muted.Render(fmt.Sprintf("  metrics %d–%d of %d · ↑/↓ pgup/pgdn scroll", from+1, to, n))
}

// take keeps the analysis an analysisShownMsg carries.
func (v *analysisView) take(msg tea.Msg) {
	if msg, ok := msg.(analysisShownMsg); ok {
		v.data = msg.panel
	}
}

// ciPane is the Δ% of each metric with its confidence interval on a
// shared axis. It owns the axis' scale, kept steady from one analysis to
// the next (nextCIScale).
type ciPane struct {
	analysisView
	scale float64 // the axis' half-width (%); 0: from the metrics
}

func newCIPane(st *Styles, pd panelData) ciPane {
	return ciPane{analysisView: analysisView{st: st, data: pd}}
}

// Update takes a new analysis and rescales the axis if it needs to.
func (p ciPane) Update(msg tea.Msg) (ciPane, tea.Cmd) {
	if msg, ok := msg.(analysisShownMsg); ok {
		p.scale = nextCIScale(p.scale, msg.panel.metrics)
	}
	p.take(msg)
	return p, nil
}

// View draws the title, a row per metric and the axis.
func (p ciPane) View() string {
	st, pd, w := p.st, p.data, p.width
	conf := pd.confidence
	if conf == 0 {
		conf = 0.95
	}
	vs := "B vs A"
	if pd.builds > 2 {
		vs = "each build vs A"
	}
	level := ciLevels(pd.metrics, conf)
	title := fmt.Sprintf("Δ%% of medians, %s, %s bootstrap CI", vs, level)
	switch {
	case pd.sequential:
		title = fmt.Sprintf("Δ%% B vs A, paired, %s anytime-valid CI: valid at any look", level)
		if pd.seqCap > 0 {
			title = fmt.Sprintf("Δ%% B vs A, paired, %s sequential CI: valid at any look up to max_trials %d", level, pd.seqCap)
		}
	case pd.paired:
		title = fmt.Sprintf("Δ%% %s, paired rounds, %s CI: valid at the planned end only", vs, level)
	}
	if pd.final {
		title += " · final"
	}
	lines := []string{st.PanelTitle.Render(truncate(title, w))}
	if len(pd.metrics) == 0 {
		return strings.Join(append(lines, st.Muted.Render("  waiting for counted trials of both builds")), "\n")
	}
	scale := p.scale
	if from, to := p.shown(); scale <= 0 || to-from < len(pd.metrics) {
		// The rows shown set the axis when not all fit (a suite's list
		// scrolls): one noisy benchmark below the fold no longer squeezes
		// every bar into ±200%.
		scale = ciScale(pd.metrics[from:to])
	}
	nameW := 14
	numW := 8
	rangeW := 19
	verdW := 12
	barW := w - nameW - numW - rangeW - verdW - 4
	if barW > 40 {
		barW = 40
	}
	from, to := p.shown()
	for _, m := range pd.metrics[from:to] {
		vs := st.Verdict(m.verdict)
		rng := fmt.Sprintf("[%s, %s]", fmtPctShort(m.ciLow), fmtPctShort(m.ciHigh))
		line := pad(m.name, nameW) + " " + pad(fmtPctShort(m.deltaPct), numW) + " " + pad(rng, rangeW) + " "
		if barW >= 7 {
			line += vs.Render(ciBar(m.ciLow, m.deltaPct, m.ciHigh, scale, barW)) + " "
		}
		line += vs.Render(verdictWord(m.verdict))
		lines = append(lines, truncate(line, w))
	}
	if more := p.moreLine(); more != "" {
		lines = append(lines, more)
	}
	if barW >= 7 {
		lines = append(lines, st.Muted.Render(truncate(pad("", nameW+numW+rangeW+3)+ciAxis(scale, barW), w)))
	}
	return strings.Join(lines, "\n")
}

// ciLevels names the confidence of the intervals drawn: "95%", or with
// metrics corrected together at a higher level (analysis' familyLevels)
// the first row's and the others', "95% (others 97.5%)".
func ciLevels(ms []metricPanel, conf float64) string {
	pct := func(c float64) string { return fmt.Sprintf("%.4g%%", c*100) }
	first, other := conf, 0.0
	for i, m := range ms {
		if m.ciLevel <= 0 || math.IsNaN(m.ciLow) {
			continue
		}
		if i == 0 {
			first = m.ciLevel
		} else if m.ciLevel != first {
			other = m.ciLevel
		}
	}
	if other == 0 {
		return pct(first)
	}
	return fmt.Sprintf("%s (others %s)", pct(first), pct(other))
}

// seqPane is the anytime-valid analysis of paired metrics, the numbers
// that stay valid however often they are looked at. It draws nothing
// without pairs, or when the CI pane already shows them (stop auto).
type seqPane struct{ analysisView }

func newSeqPane(st *Styles, pd panelData) seqPane { return seqPane{analysisView{st: st, data: pd}} }

// Update takes a new analysis.
func (p seqPane) Update(msg tea.Msg) (seqPane, tea.Cmd) {
	p.take(msg)
	return p, nil
}

// View draws the title and a row per paired metric.
func (p seqPane) View() string {
	st, pd, w := p.st, p.data, p.width
	if pd.sequential {
		return ""
	}
	var rows []string
	from, to := p.shown()
	for _, m := range pd.metrics[from:to] {
		if !m.seq.ok {
			continue
		}
		rng := fmt.Sprintf("[%s, %s]", fmtPctShort(m.seq.low), fmtPctShort(m.seq.high))
		// The verdict words of every other panel: what this sequential
		// analysis alone would say at α (no correction: a peek).
		dec, _ := analysis.SequentialVerdict(analysis.Sequential{Decision: m.seq.decision}, analysis.Float(m.seq.p), pd.alpha)
		rows = append(rows, truncate(pad(m.name, 14)+" "+pad(fmtPctShort(m.seq.delta), 8)+" "+pad(rng, 19)+" "+
			fmt.Sprintf("p %-7s %s", fmtP(m.seq.p, pd.alpha), dec), w))
	}
	if len(rows) == 0 {
		return ""
	}
	return strings.Join(append([]string{st.PanelTitle.Render(truncate("anytime-valid (mean ratio, valid at any look)", w))}, rows...), "\n")
}

// pPane is the p-values of each metric and the test settings.
type pPane struct{ analysisView }

func newPPane(st *Styles, pd panelData) pPane { return pPane{analysisView{st: st, data: pd}} }

// Update takes a new analysis.
func (p pPane) Update(msg tea.Msg) (pPane, tea.Cmd) {
	p.take(msg)
	return p, nil
}

// View draws the settings line, the column heads and a row per metric.
func (p pPane) View() string {
	st, pd, w := p.st, p.data, p.width
	test := pd.test
	if test == "" {
		test = "mann-whitney"
	}
	if pd.paired {
		test = "paired signed-rank"
	}
	if pd.sequential {
		test = "anytime-valid (any look)"
		if pd.seqCap > 0 {
			test = fmt.Sprintf("sequential (any look ≤ %d rounds)", pd.seqCap)
		}
	}
	lines := []string{st.PanelTitle.Render(truncate(fmt.Sprintf("p-values · α=%g · %s · %s", pd.alpha, pd.correction, test), w))}
	if len(pd.metrics) == 0 {
		return lines[0]
	}
	showKW := false
	for _, m := range pd.metrics {
		if !math.IsNaN(m.kwP) {
			showKW = true
		}
	}
	nameW := 14
	if w >= 110 {
		nameW = 18
	}
	head := pad("metric", nameW) + fmt.Sprintf(" %8s %8s %8s", "p", "p adj", "Welch p")
	if showKW {
		head += fmt.Sprintf(" %8s", "order p")
	}
	nHead := "n A/B"
	if pd.builds > 2 {
		nHead = "n A/X" // each row's build after the base
	}
	head += fmt.Sprintf(" %7s %9s", "MDE", nHead)
	lines = append(lines, st.Muted.Render(truncate(head, w)))
	from, to := p.shown()
	for _, m := range pd.metrics[from:to] {
		pstyle := st.NoChange
		if !math.IsNaN(m.pAdj) && m.pAdj < pd.alpha {
			pstyle = st.Verdict(m.verdict)
		}
		line := pad(m.name, nameW) + " " + pstyle.Render(fmt.Sprintf("%8s", fmtP(m.p, pd.alpha))) + " " +
			pstyle.Render(fmt.Sprintf("%8s", fmtP(m.pAdj, pd.alpha))) + fmt.Sprintf(" %8s", fmtP(m.welchP, pd.alpha))
		if showKW {
			line += fmt.Sprintf(" %8s", fmtP(m.kwP, pd.alpha))
		}
		mde := "—"
		if !math.IsNaN(m.mde) && !math.IsInf(m.mde, 0) {
			mde = fmt.Sprintf("%.2f%%", m.mde)
		}
		line += fmt.Sprintf(" %7s %9s", mde, fmt.Sprintf("%d/%d", m.nA, m.nB))
		lines = append(lines, truncate(line, w))
	}
	return strings.Join(lines, "\n")
}

// regimePane is the regimes when toggles split the session: a title
// saying which regime the panels analyse and why, then up to rows regimes
// (the analysed one, ▸, and the latest others) with their toggles,
// counted trials and notes. It draws nothing with one regime.
type regimePane struct{ analysisView }

func newRegimePane(st *Styles, pd panelData) regimePane {
	return regimePane{analysisView{st: st, data: pd}}
}

// Update takes a new analysis.
func (p regimePane) Update(msg tea.Msg) (regimePane, tea.Cmd) {
	p.take(msg)
	return p, nil
}

// View draws the title and the regimes shown.
func (p regimePane) View() string {
	st, pd, w := p.st, p.data, p.width
	if len(pd.regimes) < 2 {
		return ""
	}
	out := []string{st.PanelTitle.Render(truncate(pd.regimeWhy, w))}
	if p.rows < len(pd.regimes) {
		// Too few rows for a line each: every regime's rounds on one.
		return out[0] + "\n" + truncate(regimesLine(pd.regimes, pd.regimePick), w)
	}
	for k, r := range pd.regimes {
		out = append(out, truncate(regimeLine(r, k == pd.regimePick), w))
	}
	return strings.Join(out, "\n")
}
