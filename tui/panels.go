package tui

import (
	"fmt"
	"math"
	"strings"

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
	n                 int  // counted trials the analysis covers
	final             bool // computed after the last event: the run's conclusion
	warnings          []string
	paired            bool // some metric is analysed as paired rounds
	sequential        bool // the verdicts come from the sequential analysis (stop auto)
	seqCap            int  // > 0: the sequential analysis is calibrated to this many rounds (max_trials)
	// builds is the number of builds (0 or 2: an A/B); with more, each
	// metric has a row per build after the base, named "metric B", ...
	builds int
	// With toggles of controls or order: the regimes, the index of the
	// analysed one and why it was chosen (sessions.ChooseRegime).
	regimes    []sessions.Regime
	regimePick int
	regimeWhy  string
	// pool is the analysis blocked on device (analysis.AnalyzePool, as
	// perflab report shows it) of poolMetric, the first metric, for a
	// session over a pool; nil otherwise.
	pool       *analysis.PoolAnalysis
	poolMetric string
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
	ciLevel            float64 // the CI's confidence (analysis.Decision.Confidence)
	seq                seqPanel
	p, pAdj, welchP    float64
	kwP                float64
	mde                float64
	verdict            string
	warnings           []string
}

// fmtP formats a p-value for the panels, never rounded across alpha
// (analysis.FormatP).
func fmtP(p, alpha float64) string {
	switch {
	case math.IsNaN(p):
		return format.Undefined
	case p < 0.0001 && alpha > 0.0001:
		return "<0.0001"
	case p < 0.001:
		return analysis.FormatP(p, alpha, 4)
	default:
		return analysis.FormatP(p, alpha, 3)
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

// ciAxis is the scale under ciBar's bars of width w: -scale%, 0 and
// +scale% at the ends and the middle.
func ciAxis(scale float64, w int) string {
	axis := []rune(strings.Repeat(" ", w))
	put := func(at int, txt string) {
		for i, r := range []rune(txt) {
			if at+i >= 0 && at+i < len(axis) {
				axis[at+i] = r
			}
		}
	}
	hi := fmt.Sprintf("+%g%%", scale)
	put(0, fmt.Sprintf("-%g%%", scale))
	put((w-1)/2, "0")
	put(w-len(hi), hi)
	return string(axis)
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
	// Past the last step: the next 1–2–5 multiple of a power of ten, so
	// that the axis reads -1000% … +1000%, not -848.7433772585248%.
	p := math.Pow(10, math.Floor(math.Log10(s)))
	for _, m := range []float64{1, 2, 5, 10} {
		if s <= m*p {
			return m * p
		}
	}
	return 10 * p
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
			if t := s.Trials()[i]; t.Status == lab.StatusFailed || t.Status == lab.StatusTimeout {
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
	if w := sessions.ReadbackWarning(s.mismatches); w != "" {
		out = append(out, w)
	}
	return out
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

// regimeLine is one regime, compactly: "▸ 2 r11–  9 rounds  tmpfs on→off
// 10+10 · note: …".
func regimeLine(r sessions.Regime, picked bool) string {
	mark := " "
	if picked {
		mark = "▸"
	}
	s := fmt.Sprintf("%s %d %s  %s  %s  %d+%d", mark, r.Index, regimeRange(r), plural(r.Rounds, "1 round", fmt.Sprintf("%d rounds", r.Rounds)),
		regimeToggles(r), r.Counted[0], r.Counted[1])
	for _, n := range r.Notes {
		s += " · note: " + n
	}
	return s
}

// regimesLine is every regime on one line with its rounds, then the
// latest one's toggles and notes: "1 r0–14 14 rounds · ▸2 r15– 3 rounds
// · order random→alternate · note: …".
func regimesLine(rs []sessions.Regime, pick int) string {
	var parts []string
	for k, r := range rs {
		mark := ""
		if k == pick {
			mark = "▸"
		}
		parts = append(parts, fmt.Sprintf("%s%d %s %s", mark, r.Index, regimeRange(r), plural(r.Rounds, "1 round", fmt.Sprintf("%d rounds", r.Rounds))))
	}
	last := rs[len(rs)-1]
	parts = append(parts, regimeToggles(last))
	for _, n := range last.Notes {
		parts = append(parts, "note: "+n)
	}
	return strings.Join(parts, " · ")
}

// regimeRange is a regime's rounds: "r11–19", or "r11–" while open.
func regimeRange(r sessions.Regime) string {
	if r.ToRound < 0 {
		return fmt.Sprintf("r%d–", r.FromRound)
	}
	return fmt.Sprintf("r%d–%d", r.FromRound, r.ToRound)
}

// regimeToggles is what started a regime: "tmpfs on→off", or "start".
func regimeToggles(r sessions.Regime) string {
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
	return strings.Join(tg, ", ")
}
