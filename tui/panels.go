package tui

import (
	"fmt"
	"math"
	"strings"

	"github.com/guptarohit/asciigraph"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
)

// panelData is the analysis as the dashboard draws it, computed off the
// Update path and cached until the next counted trial. NaN means undefined.
type panelData struct {
	alpha, confidence float64
	correction, test  string
	resamples         int
	metrics           []metricPanel
	n                 int     // counted trials the analysis covers
	final             bool    // computed after the last event: the run's conclusion
	ciScale           float64 // half-width of the CI axis (%), kept steady by the dashboard; 0: from the metrics
	warnings          []string
	paired            bool // some metric is analysed as paired rounds
	sequential        bool // the verdicts come from the anytime-valid analysis (stop auto)
	// With toggles of controls or order: the regimes, the index of the
	// analysed one and why it was chosen (sessions.ChooseRegime).
	regimes    []sessions.Regime
	regimePick int
	regimeWhy  string
}

// seqPanel is a metric's anytime-valid analysis: valid at any look.
type seqPanel struct {
	ok                  bool
	delta, low, high, p float64
	decision            string
	n                   int
}

// metricPanel is one metric's comparison.
type metricPanel struct {
	name, unit, better string
	nA, nB             int
	medA, medB         float64
	deltaPct           float64 // Δ% the verdict rests on (analysis.Decision)
	ciLow, ciHigh      float64 // its CI, in %
	seq                seqPanel
	p, pAdj, welchP    float64
	kwP                float64
	mde                float64
	verdict            string
	warnings           []string
}

func fmtP(p float64) string {
	switch {
	case math.IsNaN(p):
		return format.Undefined
	case p < 0.0001:
		return "<0.0001"
	case p < 0.001:
		return fmt.Sprintf("%.4f", p)
	default:
		return fmt.Sprintf("%.3f", p)
	}
}

func fmtPct(x float64) string { return format.SignedPct(analysis.Float(x)) }

func fmtNum(x float64) string {
	switch ax := math.Abs(x); {
	case math.IsNaN(x):
		return format.Undefined
	case ax >= 1e6:
		return fmt.Sprintf("%.4g", x)
	case ax >= 100:
		return fmt.Sprintf("%.1f", x)
	case ax >= 1:
		return fmt.Sprintf("%.3f", x)
	default:
		return fmt.Sprintf("%.4g", x)
	}
}

// verdictWord is the verdict as printed: the word carries the meaning when
// colour is off.
func verdictWord(v string) string {
	if v == "" {
		return "inconclusive"
	}
	return v
}

// ciBar draws the CI [lo, hi] (in %) with the point estimate on an axis from
// -scale to +scale, zero marked in the middle.
func ciBar(lo, point, hi, scale float64, w int) string {
	if w < 5 {
		return ""
	}
	cells := []rune(strings.Repeat("─", w))
	pos := func(x float64) int {
		i := int(math.Round((x + scale) / (2 * scale) * float64(w-1)))
		return max(0, min(w-1, i))
	}
	zero := pos(0)
	cells[zero] = '┼'
	if !math.IsNaN(lo) && !math.IsNaN(hi) {
		for i := pos(lo); i <= pos(hi); i++ {
			cells[i] = '━'
		}
		if lo < -scale {
			cells[0] = '◀'
		}
		if hi > scale {
			cells[w-1] = '▶'
		}
	}
	if !math.IsNaN(point) {
		cells[pos(point)] = '●'
	}
	return string(cells)
}

// ciSteps are the half-widths (%) the CI axis can take.
var ciSteps = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500}

// ciScale is the half-width of the CI axis the metrics need: the largest
// bound shown, at least 1%, rounded up to a step.
func ciScale(ms []metricPanel) float64 {
	s := 1.0
	for _, m := range ms {
		for _, x := range []float64{m.ciLow, m.ciHigh, m.deltaPct} {
			if !math.IsNaN(x) && !math.IsInf(x, 0) && math.Abs(x) > s {
				s = math.Abs(x)
			}
		}
	}
	for _, step := range ciSteps {
		if s <= step {
			return step
		}
	}
	return s
}

// nextCIScale keeps the CI axis steady from one analysis to the next: it
// widens at once when the intervals need it, and narrows by whole steps
// only once they fit in half of the smaller step, so an interval that
// wavers around a step boundary does not make the axis jump back and forth.
func nextCIScale(cur float64, ms []metricPanel) float64 {
	need := ciScale(ms)
	if cur <= 0 || need >= cur {
		return need
	}
	for i := len(ciSteps) - 1; i > 0; i-- {
		if ciSteps[i] == cur && need <= ciSteps[i-1]/2 {
			return nextCIScale(ciSteps[i-1], ms)
		}
	}
	return cur
}

// fmtPctShort is fmtPct with fewer decimals for large values, so that an
// interval such as [+255%, +275%] fits an 80-column screen.
func fmtPctShort(x float64) string {
	switch a := math.Abs(x); {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "—"
	case a >= 100:
		return fmt.Sprintf("%+.0f%%", x)
	case a >= 10:
		return fmt.Sprintf("%+.1f%%", x)
	}
	return fmt.Sprintf("%+.2f%%", x)
}

// ciPanel renders the Δ% and bootstrap CI per metric.
func ciPanel(st *Styles, pd panelData, w int, maxRows int) []string {
	conf := pd.confidence
	if conf == 0 {
		conf = 0.95
	}
	title := fmt.Sprintf("Δ%% of medians, B vs A, %g%% bootstrap CI", conf*100)
	switch {
	case pd.sequential:
		title = fmt.Sprintf("Δ%% B vs A, paired, %g%% anytime-valid CI: valid at any look", conf*100)
	case pd.paired:
		title = fmt.Sprintf("Δ%% B vs A, paired rounds, %g%% CI: valid at the planned end only", conf*100)
	}
	if pd.final {
		title += " · final"
	}
	lines := []string{st.PanelTitle.Render(truncate(title, w))}
	if len(pd.metrics) == 0 {
		return append(lines, st.Muted.Render("  waiting for counted trials of both builds"))
	}
	scale := pd.ciScale
	if scale <= 0 {
		scale = ciScale(pd.metrics)
	}
	nameW := 14
	numW := 8
	rangeW := 19
	verdW := 12
	barW := w - nameW - numW - rangeW - verdW - 4
	if barW > 40 {
		barW = 40
	}
	for i, m := range pd.metrics {
		if i >= maxRows {
			lines = append(lines, st.Muted.Render(fmt.Sprintf("  … %d more metrics", len(pd.metrics)-i)))
			break
		}
		vs := st.Verdict(m.verdict)
		rng := fmt.Sprintf("[%s, %s]", fmtPctShort(m.ciLow), fmtPctShort(m.ciHigh))
		line := pad(m.name, nameW) + " " + pad(fmtPctShort(m.deltaPct), numW) + " " + pad(rng, rangeW) + " "
		if barW >= 7 {
			line += vs.Render(ciBar(m.ciLow, m.deltaPct, m.ciHigh, scale, barW)) + " "
		}
		line += vs.Render(verdictWord(m.verdict))
		lines = append(lines, truncate(line, w))
	}
	if barW >= 7 {
		axis := []rune(strings.Repeat(" ", barW))
		put := func(at int, txt string) {
			for i, r := range []rune(txt) {
				if at+i >= 0 && at+i < len(axis) {
					axis[at+i] = r
				}
			}
		}
		lo, hi := fmt.Sprintf("-%g%%", scale), fmt.Sprintf("+%g%%", scale)
		put(0, lo)
		put((barW-1)/2, "0")
		put(barW-len(hi), hi)
		lines = append(lines, st.Muted.Render(truncate(pad("", nameW+numW+rangeW+3)+string(axis), w)))
	}
	return lines
}

// seqPanelLines renders the anytime-valid analysis of paired metrics, the
// numbers that stay valid however often they are looked at; none without
// pairs, or when the CI panel already shows them (stop auto).
func seqPanelLines(st *Styles, pd panelData, w int, maxRows int) []string {
	if pd.sequential {
		return nil
	}
	var rows []string
	for i, m := range pd.metrics {
		if !m.seq.ok || i >= maxRows {
			continue
		}
		rng := fmt.Sprintf("[%s, %s]", fmtPctShort(m.seq.low), fmtPctShort(m.seq.high))
		dec := m.seq.decision
		if dec == analysis.DecisionContinue {
			dec = "undecided"
		}
		rows = append(rows, truncate(pad(m.name, 14)+" "+pad(fmtPctShort(m.seq.delta), 8)+" "+pad(rng, 19)+" "+
			fmt.Sprintf("p %-7s %s", fmtP(m.seq.p), dec), w))
	}
	if len(rows) == 0 {
		return nil
	}
	return append([]string{st.PanelTitle.Render(truncate("anytime-valid (mean ratio, valid at any look)", w))}, rows...)
}

// pPanel renders the p-values per metric and the test settings.
func pPanel(st *Styles, pd panelData, w int, maxRows int) []string {
	test := pd.test
	if test == "" {
		test = "mann-whitney"
	}
	if pd.paired {
		test = "paired signed-rank"
	}
	if pd.sequential {
		test = "anytime-valid (any look)"
	}
	lines := []string{st.PanelTitle.Render(truncate(fmt.Sprintf("p-values · α=%g · %s correction · primary %s", pd.alpha, pd.correction, test), w))}
	if len(pd.metrics) == 0 {
		return lines
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
	head += fmt.Sprintf(" %7s %9s", "MDE", "n A/B")
	lines = append(lines, st.Muted.Render(truncate(head, w)))
	for i, m := range pd.metrics {
		if i >= maxRows {
			break
		}
		pstyle := st.NoChange
		if !math.IsNaN(m.pAdj) && m.pAdj < pd.alpha {
			pstyle = st.Verdict(m.verdict)
		}
		line := pad(m.name, nameW) + " " + pstyle.Render(fmt.Sprintf("%8s", fmtP(m.p))) + " " +
			pstyle.Render(fmt.Sprintf("%8s", fmtP(m.pAdj))) + fmt.Sprintf(" %8s", fmtP(m.welchP))
		if showKW {
			line += fmt.Sprintf(" %8s", fmtP(m.kwP))
		}
		mde := "—"
		if !math.IsNaN(m.mde) && !math.IsInf(m.mde, 0) {
			mde = fmt.Sprintf("%.2f%%", m.mde)
		}
		line += fmt.Sprintf(" %7s %9s", mde, fmt.Sprintf("%d/%d", m.nA, m.nB))
		lines = append(lines, truncate(line, w))
	}
	return lines
}

// warningLines gathers the analysis warnings and the run's own (failed
// trials, throttling, read-back mismatches).
func warningLines(s *runState, pd panelData) []string {
	out := append([]string(nil), pd.warnings...)
	for _, m := range pd.metrics {
		for _, w := range m.warnings {
			out = append(out, m.name+": "+w)
		}
	}
	if n := s.Counts().ByStatus[lab.StatusFailed] + s.Counts().ByStatus[lab.StatusTimeout]; n > 0 {
		last := ""
		for i := len(s.Trials()) - 1; i >= 0; i-- {
			if t := s.Trials()[i]; t.Status != lab.StatusOK {
				last = fmt.Sprintf(" (last: #%d %s)", t.Index, t.Reason)
				break
			}
		}
		what := "trials failed or timed out"
		if n == 1 {
			what = "trial failed or timed out"
		}
		out = append(out, fmt.Sprintf("%d %s, not counted%s", n, what, last))
	}
	if len(s.mismatches) > 0 {
		out = append(out, fmt.Sprintf("governor read-back differs: %s", strings.Join(s.mismatches, ", ")))
	}
	return out
}

// streamLines renders the latest trials, newest last.
func streamLines(st *Styles, s *runState, w, h int) []string {
	if h <= 0 {
		return nil
	}
	lines := []string{st.PanelTitle.Render("trials")}
	h--
	start := max(0, len(s.Trials())-h)
	for _, t := range s.Trials()[start:] {
		arm := "A"
		if t.Arm == lab.ArmTreatment {
			arm = "B"
		}
		// "ok" goes without saying: the room is the metrics'.
		line := fmt.Sprintf("#%-4d r%-3d %s", t.Index, t.Round, arm)
		switch {
		case t.Status != lab.StatusOK:
			line += " " + t.Status
		case t.Warmup:
			line += " warm-up"
		}
		var ms []string
		for _, mt := range t.Metrics {
			ms = append(ms, mt.Name+"="+fmtNum(mt.Value))
		}
		rest := strings.Join(ms, " ")
		if t.Status != lab.StatusOK {
			rest = t.Reason
		}
		line = truncate(line+" "+rest, w)
		switch {
		case t.Status != lab.StatusOK:
			line = st.Error.Render(line)
		case t.Warmup:
			line = st.Muted.Render(line)
		}
		lines = append(lines, line)
	}
	if len(s.Trials()) == 0 {
		lines = append(lines, st.Muted.Render("  no trials yet"))
	}
	return lines
}

// chartLines draws the MFLOPS of the stability probe with asciigraph. The
// y axis is a fixed band around the mean of the samples shown (±5%,
// widened in steps only when a sample falls outside), so a fraction of a
// percent of noise looks small and a real drop looks big; the band is
// labelled under the chart. The summary goes on the title line when it
// fits, else on a line of its own, wrapped rather than cut.
func chartLines(st *Styles, s *runState, summary string, w, h int) []string {
	title := "MFLOPS stability check"
	var lines []string
	switch {
	case summary == "":
		lines = []string{st.PanelTitle.Render(truncate(title, w))}
	case len([]rune(title+" · "+summary)) <= w:
		lines = []string{st.PanelTitle.Render(title + " · " + summary)}
	default:
		lines = []string{st.PanelTitle.Render(truncate(title, w))}
		for _, l := range wrapWords(summary, w, 2) {
			lines = append(lines, st.PanelTitle.Render(l))
		}
	}
	h -= len(lines) - 1
	if h < 4 || w < 20 {
		return lines
	}
	n := len(s.probe)
	if n == 0 {
		return append(lines, st.Muted.Render("  waiting for samples"))
	}
	width := w - 12 // room for the y-axis labels
	from := max(0, n-width)
	series := make([]float64, 0, n-from)
	for _, p := range s.probe[from:] {
		series = append(series, p.MFLOPS)
	}
	if len(series) == 1 {
		series = append(series, series[0])
	}
	mean, band := mflopsBand(series)
	opts := []asciigraph.Option{asciigraph.Height(h - 2), asciigraph.Precision(0)}
	if mean > 0 {
		opts = append(opts, asciigraph.LowerBound(mean*(1-band/100)), asciigraph.UpperBound(mean*(1+band/100)))
	}
	if len(series) > width {
		opts = append(opts, asciigraph.Width(width))
	}
	// Fewer samples than columns are drawn one per column: stretching them
	// would show a short check as if it filled the window.
	graph := asciigraph.Plot(series, opts...)
	for _, l := range strings.Split(graph, "\n") {
		lines = append(lines, truncate(l, w))
	}
	last := s.probe[n-1]
	info := fmt.Sprintf("  t=%.0fs  %.0f MFLOPS", last.T, last.MFLOPS)
	if mean > 0 {
		info += fmt.Sprintf("  scale: mean %.0f ±%g%%", mean, band)
	}
	if last.TempC > 0 {
		info += fmt.Sprintf("  %.1f°C", last.TempC)
	}
	if len(last.FreqKHz) > 0 {
		var fs []string
		for _, f := range last.FreqKHz {
			fs = append(fs, fmt.Sprintf("%d", f/1000))
		}
		info += "  MHz " + strings.Join(fs, "/")
	}
	return append(lines, st.Muted.Render(truncate(info, w)))
}

// mflopsBands are the half-widths (% of the mean) the MFLOPS axis can take.
var mflopsBands = []float64{5, 10, 20, 50, 100}

// mflopsBand returns the mean of xs and the smallest band of mflopsBands
// that holds every x.
func mflopsBand(xs []float64) (mean, band float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if !(mean > 0) {
		return 0, 0
	}
	need := 0.0
	for _, x := range xs {
		need = math.Max(need, math.Abs(x-mean)/mean*100)
	}
	for _, b := range mflopsBands {
		if need <= b {
			return mean, b
		}
	}
	return mean, math.Ceil(need/100) * 100
}

// progressBar draws a bar of width w for fraction f.
func progressBar(st *Styles, f float64, w int) string {
	if w < 3 {
		return ""
	}
	full := format.Filled(f, w)
	return st.ProgressFull.Render(strings.Repeat("█", full)) + st.ProgressEmpty.Render(strings.Repeat("░", w-full))
}

// regimeLines is the regimes panel when toggles split the session: a
// title saying which regime the panels analyse and why, then up to
// maxRows regimes (the analysed one, ▸, and the latest others) with their
// toggles, counted trials and notes. Nil with one regime.
func regimeLines(st *Styles, pd panelData, w, maxRows int) []string {
	if len(pd.regimes) < 2 {
		return nil
	}
	out := []string{st.PanelTitle.Render(truncate(pd.regimeWhy, w))}
	show := make([]bool, len(pd.regimes))
	n := 0
	if pd.regimePick >= 0 && pd.regimePick < len(show) {
		show[pd.regimePick] = true
		n++
	}
	for k := len(show) - 1; k >= 0 && n < max(1, maxRows); k-- {
		if !show[k] {
			show[k] = true
			n++
		}
	}
	for k, r := range pd.regimes {
		if show[k] {
			out = append(out, truncate(regimeLine(r, k == pd.regimePick), w))
		}
	}
	return out
}

// regimeLine is one regime, compactly: "▸ 2 r11–  tmpfs on→off  10+10
// · note: …".
func regimeLine(r sessions.Regime, picked bool) string {
	mark := " "
	if picked {
		mark = "▸"
	}
	rounds := fmt.Sprintf("r%d–%d", r.FromRound, r.ToRound)
	if r.ToRound < 0 {
		rounds = fmt.Sprintf("r%d–", r.FromRound)
	}
	var tg []string
	for _, t := range r.Toggles {
		if t.From != "" {
			tg = append(tg, fmt.Sprintf("%s %s→%s", t.What, unquote(t.From), unquote(t.To)))
		} else {
			tg = append(tg, fmt.Sprintf("%s %s", t.What, unquote(t.To)))
		}
	}
	if len(tg) == 0 {
		tg = append(tg, "start")
	}
	s := fmt.Sprintf("%s %d %s  %s  %d+%d", mark, r.Index, rounds, strings.Join(tg, ", "), r.Counted[0], r.Counted[1])
	for _, n := range r.Notes {
		s += " · note: " + n
	}
	return s
}
