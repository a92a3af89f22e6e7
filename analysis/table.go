package analysis

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Table renders r as an aligned plain-text table in the spirit of
// benchstat: one row per metric with the medians, the estimate its verdict
// rests on ("~" when the verdict is no change) with its interval, the
// primary test's raw and corrected p-values, the sample sizes (and pairs,
// when paired) and the verdict; then notes on what would decide each
// inconclusive metric, and the warnings. Undefined values print as "n/a".
func Table(r Report) string {
	var sb strings.Builder
	sb.WriteString(tableHeading(r))
	sb.WriteString("\n\n")
	cols := tableColumnsFor(r)
	rows := [][]string{cols.head}
	for _, m := range r.Metrics {
		rows = append(rows, cols.row(r, m))
	}
	for _, g := range r.Geomeans {
		sc := cellScaleFor(g.Unit, float64(g.Medians[0]))
		row := make([]string, len(cols.head))
		row[0], row[1], row[2], row[3], row[4] = "geomean", g.Unit, sc.format(g.Medians[0]), sc.format(g.Medians[1]), fmtPct(g.Delta[0])
		rows = append(rows, row)
	}
	WriteAligned(&sb, rows, cols.right)
	sb.WriteString(poolTable(r))
	writeNotesAndWarnings(&sb, r)
	return sb.String()
}

// tableColumns are Table's columns for a report: a pairs column when a
// metric is paired, a "p all" column when a metric has more than two
// inputs, and the interval's level in its heading or, when the family's
// correction raised some rows' (familyLevels), in each row.
type tableColumns struct {
	head          []string
	right         []bool // right-aligned
	multi, paired bool
	mixed         bool // the rows' interval levels differ
}

func tableColumnsFor(r Report) tableColumns {
	var c tableColumns
	levels := map[string]bool{}
	for _, m := range r.Metrics {
		c.multi = c.multi || len(m.Others) > 0
		c.paired = c.paired || m.Paired != nil
		if m.Decision.CILowPct.Defined() {
			levels[fmtLevel(rowLevel(m, r.Confidence))] = true
		}
	}
	ciHead := fmt.Sprintf("%s CI", fmtLevel(r.Confidence))
	c.mixed = len(levels) > 1
	if len(levels) == 1 {
		for l := range levels {
			ciHead = l + " CI"
		}
	} else if c.mixed {
		ciHead = "CI (level)"
	}
	c.head = []string{"metric", "unit", "A median", "B median", "Δ", ciHead, "p", "p adj", "n A/B", "verdict"}
	c.right = []bool{false, false, true, true, true, false, true, true, true, false}
	if c.paired {
		c.head = append(c.head[:9], "pairs", "verdict")
		c.right = append(c.right[:9], true, false)
	}
	if c.multi {
		c.head = append(c.head, "p all")
		c.right = append(c.right, true)
	}
	return c
}

// row is metric m's row: no p-value when m is no member of the family
// (family.go), "~" for the change when the verdict is no change, the
// decision's interval or else the bootstrap's.
func (c tableColumns) row(r Report, m MetricResult) []string {
	p := primaryP(m, r.PrimaryTest)
	if !m.PAdjusted.Defined() {
		p = undefined()
	}
	d := m.Decision
	delta := fmtPct(d.DeltaPct)
	if m.Verdict == VerdictNoChange {
		delta = "~"
	}
	ci := "n/a"
	if d.CILowPct.Defined() && d.CIHighPct.Defined() {
		ci = fmt.Sprintf("[%s, %s]", fmtPct(d.CILowPct), fmtPct(d.CIHighPct))
		if c.mixed {
			ci += " " + fmtLevel(rowLevel(m, r.Confidence))
		}
	} else if m.Paired == nil && m.untested == "" && m.Bootstrap.Low.Defined() && m.Bootstrap.High.Defined() {
		ci = fmt.Sprintf("[%s, %s]", fmtSigned(m.Bootstrap.Low), fmtSigned(m.Bootstrap.High))
	}
	unit := m.Unit
	if unit == "" {
		unit = "-"
	}
	sc := cellScaleFor(m.Unit, float64(m.A.Median))
	row := []string{m.Name, unit, sc.format(m.A.Median), sc.format(m.B.Median), delta, ci,
		fmtP(p, r.Alpha), fmtP(m.PAdjusted, r.Alpha), fmt.Sprintf("%d/%d", m.A.N, m.B.N)}
	if c.paired {
		pairs := "-"
		if m.Paired != nil {
			pairs = fmt.Sprint(m.Paired.N)
		}
		row = append(row, pairs)
	}
	row = append(row, m.Verdict)
	if c.multi {
		// For a metric given for A and B only, the test of all its
		// inputs is KruskalWallis.
		kw := m.KruskalWallis
		if m.KruskalWallisAll != nil {
			kw = *m.KruskalWallisAll
		}
		row = append(row, fmtP(kw.P, r.Alpha))
	}
	return row
}

// writeNotesAndWarnings writes what would decide each inconclusive
// metric, then the metrics' and the report's warnings.
func writeNotesAndWarnings(sb *strings.Builder, r Report) {
	var notes, warn []string
	for _, m := range r.Metrics {
		id := m.Name
		if m.Unit != "" {
			id += " " + m.Unit
		}
		if n := decisionNote(m, r.ThresholdPct); n != "" {
			notes = append(notes, fmt.Sprintf("  %s: %s", id, n))
		}
		for _, w := range m.Warnings {
			warn = append(warn, fmt.Sprintf("  %s: %s", id, w))
		}
	}
	for _, w := range r.Warnings {
		warn = append(warn, "  "+w)
	}
	if len(notes) > 0 {
		sb.WriteString("\nnotes:\n")
		sb.WriteString(strings.Join(notes, "\n"))
		sb.WriteString("\n")
	}
	if len(warn) > 0 {
		sb.WriteString("\nwarnings:\n")
		sb.WriteString(strings.Join(warn, "\n"))
		sb.WriteString("\n")
	}
}

// DecisionNote explains a verdict that is not a plain regression or
// improvement: a significant change below the threshold, or what an
// inconclusive result would need (estimate, interval, MDE, trials). It is
// empty when there is nothing to add.
func DecisionNote(m MetricResult, thresholdPct float64) string { return decisionNote(m, thresholdPct) }

func decisionNote(m MetricResult, thr float64) string {
	d := m.Decision
	if !d.DeltaPct.Defined() || !d.CILowPct.Defined() || !d.CIHighPct.Defined() {
		return ""
	}
	est := fmt.Sprintf("Δ %s [%s, %s]", fmtPct(d.DeltaPct), fmtPct(d.CILowPct), fmtPct(d.CIHighPct))
	switch {
	case d.BelowThreshold:
		return fmt.Sprintf("significant but below the threshold of ±%g%%: %s", thr, est)
	case m.Verdict != VerdictInconclusive:
		return ""
	}
	s := "inconclusive: " + est
	if d.MDEPct.Defined() {
		s += fmt.Sprintf(", MDE %.2f%%", float64(d.MDEPct))
	}
	unit := "trials per arm"
	if m.Paired != nil {
		unit = "rounds"
	}
	if d.MoreTrials.Defined() && float64(d.MoreTrials) < 1.5 {
		unit = strings.Replace(unit, "trials", "trial", 1)
		unit = strings.TrimSuffix(unit, "s")
	}
	if d.MoreTrials.Defined() {
		s += fmt.Sprintf("; about %.0f more %s would decide at this variance", float64(d.MoreTrials), unit)
	}
	if d.CannotDecide != "" {
		s += "; " + d.CannotDecide
	}
	return s
}

// tableHeading names the inputs and the method.
func tableHeading(r Report) string {
	var parts []string
	for i, in := range r.Inputs {
		parts = append(parts, fmt.Sprintf("%s: %s", inputLetter(i), in))
	}
	paired := 0
	for _, m := range r.Metrics {
		if m.Paired != nil {
			paired++
		}
	}
	var method string
	sequential := len(r.Metrics) > 0 && r.Metrics[0].Decision.Method == MethodSequential
	switch {
	case sequential:
		seq := r.Metrics[0].Sequential
		method = fmt.Sprintf("paired rounds, sequential (stop auto): %s of log(B/A); Δ and CI: %s ratio B/A, %s", seq.Method, seqRatio(*seq), seq.Guarantee)
	case paired > 0:
		method = "paired rounds: Wilcoxon signed-rank test of log(B/A); Δ and CI: its Hodges–Lehmann ratio B/A and the interval inverting the test"
	case r.PrimaryTest == TestWelch:
		method = "Welch t test; Δ and CI: mean B vs A (Welch)"
	default:
		method = fmt.Sprintf("Mann–Whitney U test; Δ and CI: median B vs A (bootstrap, %d resamples)", resamplesOf(r))
	}
	method += "\n" + FamilyText(r) + ", "
	if r.ThresholdPct > 0 {
		method += fmt.Sprintf("threshold ±%g%%", r.ThresholdPct)
	} else {
		method += "threshold 0 (any significant change counts; no change needs a threshold)"
	}
	if len(parts) == 0 {
		return method
	}
	return strings.Join(parts, "   ") + "\n" + method
}

func resamplesOf(r Report) int {
	for _, m := range r.Metrics {
		if m.Bootstrap.Resamples > 0 {
			return m.Bootstrap.Resamples
		}
	}
	return DefaultResamples
}

// inputLetter names input i: A, B, ..., Z, then #27, #28, ...
func inputLetter(i int) string {
	if i < 26 {
		return string(rune('A' + i))
	}
	return fmt.Sprintf("#%d", i+1)
}

// rowLevel is the level of m's interval (Decision.Confidence; conf for
// results decoded without it).
func rowLevel(m MetricResult, conf float64) float64 {
	if m.Decision.Confidence > 0 {
		return m.Decision.Confidence
	}
	return conf
}

func fmtLevel(c float64) string {
	return strings.TrimSuffix(fmt.Sprintf("%.4g", c*100), ".") + "%"
}

// WriteAligned writes rows as columns separated by two spaces, the
// columns marked right aligned to the right.
func WriteAligned(sb *strings.Builder, rows [][]string, right []bool) {
	width := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, c := range row {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, row := range rows {
		var line strings.Builder
		for i, c := range row {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i > 0 {
				line.WriteString("  ")
			}
			if right[i] {
				line.WriteString(pad + c)
			} else {
				line.WriteString(c + pad)
			}
		}
		sb.WriteString(strings.TrimRight(line.String(), " "))
		sb.WriteString("\n")
	}
}

var siPrefixes = []struct {
	exp    int
	prefix string
}{
	{18, "E"}, {15, "P"}, {12, "T"}, {9, "G"}, {6, "M"}, {3, "k"},
	{-3, "m"}, {-6, "µ"}, {-9, "n"}, {-12, "p"}, {-15, "f"},
}

// fmtNum formats x with four significant digits and an SI prefix for
// large and small magnitudes (1.235M, 12.3µ).
func fmtNum(f Float) string {
	if !f.Defined() {
		return "n/a"
	}
	x := float64(f)
	a := math.Abs(x)
	if x == 0 || (a >= 0.01 && a < 1e4) {
		return fmt.Sprintf("%.4g", x)
	}
	for _, p := range siPrefixes {
		s := math.Pow(10, float64(p.exp))
		if a >= s && a < 1000*s {
			return fmt.Sprintf("%.4g", x/s) + p.prefix
		}
	}
	return fmt.Sprintf("%.3e", x)
}

// fmtSigned is fmtNum with an explicit sign.
func fmtSigned(f Float) string {
	s := fmtNum(f)
	if f.Defined() && float64(f) >= 0 {
		s = "+" + s
	}
	return s
}

// fmtPct formats a percentage with a sign: +5.35%, −0.12%.
func fmtPct(f Float) string {
	if !f.Defined() {
		return "n/a"
	}
	x := float64(f)
	if math.Abs(x) >= 1e4 {
		return fmt.Sprintf("%+.3g%%", x)
	}
	return fmt.Sprintf("%+.2f%%", x)
}

// fmtP formats a p-value with three decimals, or as <0.001, never rounded
// across alpha (FormatP).
func fmtP(f Float, alpha float64) string {
	if !f.Defined() {
		return "n/a"
	}
	if float64(f) < 0.001 && alpha > 0.001 {
		return "<0.001"
	}
	return FormatP(float64(f), alpha, 3)
}

// FormatP formats p with the given number of decimals (two significant
// digits below 10^-decimals), adding digits while rounding would carry it
// to the other side of alpha: 0.04986 at alpha 0.05 prints 0.0499, never
// 0.050 beside a significant verdict (issue 16 item 11).
func FormatP(p, alpha float64, decimals int) string {
	at := func(d int) string {
		if p != 0 && math.Abs(p) < math.Pow10(-decimals) {
			return strconv.FormatFloat(p, 'g', 2+d-decimals, 64)
		}
		return strconv.FormatFloat(p, 'f', d, 64)
	}
	s := at(decimals)
	for d := decimals + 1; d <= decimals+17; d++ {
		if q, err := strconv.ParseFloat(s, 64); err != nil || (q < alpha) == (p < alpha) {
			break
		}
		s = at(d)
	}
	return s
}

// FormatPAlpha formats p beside the alpha it is tested against, as in
// "p = 0.01666 < 0.017": p with FormatP, alpha with alphaDigits
// significant digits, more while the printed pair would compare the other
// way than p and alpha do (a computed alpha such as 0.05/3 rounded up or
// down must not make a significant p print at or above it).
func FormatPAlpha(p, alpha float64, decimals, alphaDigits int) (ps, as string) {
	ps = FormatP(p, alpha, decimals)
	q, err := strconv.ParseFloat(ps, 64)
	if err != nil {
		return ps, strconv.FormatFloat(alpha, 'g', alphaDigits, 64)
	}
	for d := alphaDigits; ; d++ {
		as = strconv.FormatFloat(alpha, 'g', d, 64)
		a, _ := strconv.ParseFloat(as, 64)
		if (q < a) == (p < alpha) || d >= 17 {
			return ps, as
		}
	}
}

// poolTable renders, for a session over a pool of devices, each device's
// paired result per metric, the stratified test over the devices and the
// heterogeneity test; "" without a pool.
func poolTable(r Report) string {
	var sb strings.Builder
	for _, m := range r.Metrics {
		pa := m.Pool
		if pa == nil {
			continue
		}
		id := m.Name
		if m.Unit != "" {
			id += " " + m.Unit
		}
		fmt.Fprintf(&sb, "\nper device, %s (paired: Hodges–Lehmann ratio B/A, %s signed-rank CI, p):\n", id, fmtLevel(r.Confidence))
		rows := [][]string{{"  device", "pairs", "Δ", "CI", "p", ""}}
		for _, d := range pa.Devices {
			ci := "n/a"
			if d.CILowPct.Defined() && d.CIHighPct.Defined() {
				ci = fmt.Sprintf("[%s, %s]", fmtPct(d.CILowPct), fmtPct(d.CIHighPct))
			}
			flag := ""
			if d.Device == pa.Disagrees {
				flag = "disagrees"
			}
			rows = append(rows, []string{"  " + d.Device, fmt.Sprint(d.N), fmtPct(d.Estimate()), ci, fmtP(d.P, r.Alpha), flag})
		}
		WriteAligned(&sb, rows, []bool{false, true, true, false, true, false})
		kw := fmtP(pa.Heterogeneity.P, r.Alpha)
		if adj := pa.HeterogeneityPAdjusted; adj.Defined() && adj != pa.Heterogeneity.P {
			kw += ", Holm over the metrics " + fmtP(adj, r.Alpha)
		}
		fmt.Fprintf(&sb, "  pooled over %d devices: stratified signed-rank (van Elteren weights) z=%s p %s; devices differ: Kruskal–Wallis p %s\n",
			len(pa.Devices), fmtZ(pa.Stratified.Z), fmtP(pa.Stratified.P, r.Alpha), kw)
	}
	return sb.String()
}

func fmtZ(z Float) string {
	if !z.Defined() {
		return "n/a"
	}
	return fmt.Sprintf("%+.2f", float64(z))
}

// FitColumns is rows (the header row first) cut to fit width columns when
// aligned by WriteAligned: only the columns keep (in that order), and the
// first of them, a name, shortened with "…" to what the others leave (at
// least 16 runes), keeping its end when keepEnd (a function's own name) or
// else its start and end (a benchmark's package and its metric).
func FitColumns(rows [][]string, keep []int, width int, keepEnd bool) [][]string {
	out := make([][]string, len(rows))
	widths := make([]int, len(keep))
	for i, r := range rows {
		out[i] = make([]string, len(keep))
		for j, k := range keep {
			out[i][j] = r[k]
			widths[j] = max(widths[j], utf8.RuneCountInString(r[k]))
		}
	}
	rest := 0 // the other columns and the two spaces before each
	for _, w := range widths[1:] {
		rest += w + 2
	}
	nameW := max(16, width-rest)
	for i := 1; i < len(out); i++ {
		out[i][0] = shorten(out[i][0], nameW, keepEnd)
	}
	return out
}

// shorten cuts s to n runes with "…": keeping its end when keepEnd, else
// a third from its start and the rest from its end.
func shorten(s string, n int, keepEnd bool) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if keepEnd {
		return "…" + string(r[len(r)-n+1:])
	}
	head := (n - 1) / 3
	return string(r[:head]) + "…" + string(r[len(r)-(n-1-head):])
}

// seqRatio names the ratio B/A a sequential analysis estimates: the
// geometric mean of the rounds' ratios, or their trimmed one.
func seqRatio(s Sequential) string {
	if s.Trim > 0 {
		return "trimmed mean"
	}
	return "mean"
}
