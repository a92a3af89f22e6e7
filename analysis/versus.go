package analysis

import (
	"fmt"
	"math"
	"strings"
)

// Versus compares several inputs with the first, the base, as benchstat
// does with several files: each other input gets its own two-input Report
// against the base, the primary p-values of all of them corrected as one
// family (every input after the base × every metric: Holm's step-down over
// the lot keeps the family-wise error at alpha), and each unit shared by
// two or more metrics a geometric-mean row.
type Versus struct {
	Inputs []string `json:"inputs"`
	// Family is the number of tests corrected together: the comparable
	// metrics of all comparisons.
	Family int `json:"family"`
	// Comparisons[i] compares input i+1 (B, C, ...) with the base (A).
	Comparisons []Report  `json:"comparisons"`
	Geomeans    []Geomean `json:"geomeans,omitempty"`
	// MedianCI[i][m] is the distribution-free confidence interval of the
	// median of input i's metric m (MedianCI), metrics in Comparisons' order.
	MedianCI [][]Interval `json:"median_ci"`
	// KruskalWallisAll[m] tests all inputs of metric m together.
	KruskalWallisAll []KruskalWallis `json:"kruskal_wallis_all"`
}

// Geomean is the geometric mean of the medians of the metrics that share
// a unit, per input, and its relative change against the base. benchstat
// gives the same summary row; it is undefined when a median is not
// positive.
type Geomean struct {
	Unit    string  `json:"unit"`
	Metrics int     `json:"metrics"`
	Medians []Float `json:"medians"`   // per input, base first
	Delta   []Float `json:"delta_pct"` // per input after the base
}

// CompareVersus compares every input after the first with the first, per
// metric, with Compare's statistics and options. opt.Labels names the
// inputs.
func CompareVersus(metrics []MetricInput, opt Options) Versus {
	k := 0
	for _, m := range metrics {
		k = max(k, len(m.Samples))
	}
	if opt.Designs == nil {
		opt.Designs = new(SequentialDesigns) // one design for all the comparisons
	}
	v := Versus{Inputs: opt.Labels}
	reps := make([]*Report, 0, max(k-1, 0))
	var used Options
	for j := 1; j < k; j++ {
		pair := make([]MetricInput, len(metrics))
		for i, m := range metrics {
			pair[i] = m
			pair[i].Samples = [][]float64{sampleAt(m.Samples, 0), sampleAt(m.Samples, j)}
			pair[i].MorePairs, pair[i].MoreDropped = nil, nil
			if j >= 2 {
				// Input j's rounds with the base, not B's.
				pair[i].Pairs, pair[i].DroppedRounds = nil, 0
				pair[i].Strata, pair[i].PairStrata = nil, nil // B's blocks
				if j-2 < len(m.MorePairs) {
					pair[i].Pairs = m.MorePairs[j-2]
				}
				if j-2 < len(m.MoreDropped) {
					pair[i].DroppedRounds = m.MoreDropped[j-2]
				}
			}
		}
		o := opt
		o.Labels = nil
		if len(opt.Labels) > j {
			o.Labels = []string{opt.Labels[0], opt.Labels[j]}
		}
		r, uo := compareAll(pair, o, nil)
		reps, used = append(reps, &r), uo
	}
	v.Family = correctAndDecide(reps, used)
	for _, r := range reps {
		v.Comparisons = append(v.Comparisons, *r)
	}
	v.Geomeans = geomeans(v.Comparisons)
	for j := 0; j < k; j++ {
		cis := make([]Interval, len(metrics))
		for i, m := range metrics {
			cis[i], _ = MedianCI(sampleAt(m.Samples, j), opt.Confidence)
		}
		v.MedianCI = append(v.MedianCI, cis)
	}
	for _, m := range metrics {
		kw, _ := KruskalWallisH(m.Samples...)
		v.KruskalWallisAll = append(v.KruskalWallisAll, kw)
	}
	return v
}

func sampleAt(s [][]float64, i int) []float64 {
	if i < len(s) {
		return s[i]
	}
	return nil
}

// geomeans computes the geometric mean row of every unit shared by two or
// more metrics of reps (the comparisons of one base with each other
// input), as benchstat does: per input the geometric mean of the metrics'
// medians (undefined when one is not positive), and per input after the
// base the geometric mean of the metrics' ratios B/A, a ratio 0/0 counting
// as 1 (undefined when a base median is 0 and the other is not).
func geomeans(reps []Report) []Geomean {
	if len(reps) == 0 {
		return nil
	}
	var units []string
	count := map[string]int{}
	for _, m := range reps[0].Metrics {
		if count[m.Unit] == 0 {
			units = append(units, m.Unit)
		}
		count[m.Unit]++
	}
	var out []Geomean
	for _, u := range units {
		if count[u] < 2 {
			continue
		}
		g := Geomean{Unit: u, Metrics: count[u]}
		var base []float64
		for _, m := range reps[0].Metrics {
			if m.Unit == u {
				base = append(base, float64(m.A.Median))
			}
		}
		g.Medians = append(g.Medians, geomean(base))
		for _, r := range reps {
			var medians, ratios []float64
			for _, m := range r.Metrics {
				if m.Unit != u {
					continue
				}
				a, b := float64(m.A.Median), float64(m.B.Median)
				medians = append(medians, b)
				switch {
				case a == b:
					ratios = append(ratios, 1)
				case a == 0:
					ratios = append(ratios, math.NaN())
				default:
					ratios = append(ratios, b/a)
				}
			}
			g.Medians = append(g.Medians, geomean(medians))
			d := geomean(ratios)
			if d.Defined() {
				d = Float((float64(d) - 1) * 100)
			}
			g.Delta = append(g.Delta, d)
		}
		out = append(out, g)
	}
	return out
}

// geomean is the geometric mean of xs, undefined when one is not a
// positive finite number.
func geomean(xs []float64) Float {
	logSum := 0.0
	for _, x := range xs {
		if !(x > 0) || math.IsInf(x, 0) {
			return undefined()
		}
		logSum += math.Log(x)
	}
	return Float(math.Exp(logSum / float64(len(xs))))
}

// VersusTable renders v in benchstat's layout: one column per input, the
// base's median with its distribution-free CI half-width, then for every
// other input its median, the Δ% its verdict rests on against the base (or ~ for no
// change) with the corrected p-value and sample size, and ▲ (regression),
// ▼ (improvement) or ? (inconclusive); a geomean row per unit shared by several metrics; then the
// warnings. Time units (ns, µs, ms, s, with or without /op) are scaled per
// row to the one that reads best.
func VersusTable(v Versus) string {
	var sb strings.Builder
	if len(v.Comparisons) == 0 {
		return ""
	}
	first := v.Comparisons[0]
	var names []string
	for i, in := range v.Inputs {
		names = append(names, fmt.Sprintf("%s: %s", inputLetter(i), in))
	}
	sb.WriteString(strings.Join(names, "   ") + "\n")
	test, est, ciOf := "Mann–Whitney U", "medians", "the median"
	if first.PrimaryTest == TestWelch {
		test, est = "Welch t", "means"
	}
	if len(first.Metrics) > 0 && first.Metrics[0].Paired != nil {
		test, est, ciOf = "Wilcoxon signed-rank (rounds paired)", "the paired rounds' Hodges–Lehmann ratio", "that estimate (inverting the signed-rank test)"
	}
	fmt.Fprintf(&sb, "each input vs A (the base): Δ of %s, %s test p after %s correction across inputs × metrics, alpha %g; ± is the %s CI of %s\n",
		est, test, first.Correction, first.Alpha, fmtLevel(first.Confidence), ciOf)
	sb.WriteString("▲ regression, ▼ improvement, ~ no change, ? inconclusive\n\n")

	k := len(v.Comparisons) + 1
	head := []string{"metric", "unit", "A median"}
	right := []bool{false, false, true}
	for j := 1; j < k; j++ {
		head = append(head, inputLetter(j)+" median", "vs A", "")
		right = append(right, true, true, false)
	}
	rows := [][]string{head}
	for i, m := range first.Metrics {
		sc := timeScaleFor(m.Unit, float64(m.A.Median))
		unit := m.Unit
		if unit == "" {
			unit = "-"
		}
		row := []string{m.Name, unit, sc.format(m.A.Median) + halfWidth(m.A.Median, v.ci(0, i))}
		for j, r := range v.Comparisons {
			mj := r.Metrics[i]
			row = append(row, sc.format(mj.B.Median)+halfWidth(mj.B.Median, v.ci(j+1, i)), deltaCell(mj, r.Alpha), verdictMark(mj.Verdict))
		}
		rows = append(rows, row)
	}
	for _, g := range v.Geomeans {
		sc := timeScaleFor(g.Unit, float64(g.Medians[0]))
		row := []string{"geomean", g.Unit, sc.format(g.Medians[0])}
		for j, d := range g.Delta {
			row = append(row, sc.format(g.Medians[j+1]), fmtPct(d), "")
		}
		rows = append(rows, row)
	}
	WriteAligned(&sb, rows, right)

	// Each comparison words its warnings with A and B; B becomes the
	// input's letter, and a warning about the base is given once.
	var warn []string
	seen := map[string]bool{}
	add := func(w string) {
		if !seen[w] {
			seen[w] = true
			warn = append(warn, w)
		}
	}
	for j, r := range v.Comparisons {
		for _, m := range r.Metrics {
			id := m.Name
			if m.Unit != "" {
				id += " " + m.Unit
			}
			for _, w := range m.Warnings {
				if rest, ok := strings.CutPrefix(w, "B "); ok {
					w = inputLetter(j+1) + " " + rest
				} else if !strings.HasPrefix(w, "A ") {
					w = "A vs " + inputLetter(j+1) + ": " + w
				}
				add(fmt.Sprintf("  %s: %s", id, w))
			}
		}
		for _, w := range r.Warnings {
			add("  " + w)
		}
	}
	if len(warn) > 0 {
		sb.WriteString("\nwarnings:\n" + strings.Join(warn, "\n") + "\n")
	}
	return sb.String()
}

// deltaCell is "+19.75% (p=0.002 n=15)", "~ (p=0.700 n=3)" for no
// change, or "n/a". Δ is the estimate the verdict rests on (Decision): the
// median's with Mann–Whitney, the mean's with Welch, so a regression is
// never shown beside a Δ of another estimator with the other sign.
func deltaCell(m MetricResult, alpha float64) string {
	d := fmtPct(m.Decision.DeltaPct)
	if m.Verdict == VerdictNoChange {
		d = "~"
	}
	p := fmtP(m.PAdjusted, alpha)
	if strings.HasPrefix(p, "<") {
		p = "p" + p
	} else {
		p = "p=" + p
	}
	return fmt.Sprintf("%s (%s n=%d)", d, p, m.B.N)
}

// ci is the median CI of input j's metric i, undefined when missing.
func (v Versus) ci(j, i int) Interval {
	if j < len(v.MedianCI) && i < len(v.MedianCI[j]) {
		return v.MedianCI[j][i]
	}
	return Interval{Point: undefined(), Low: undefined(), High: undefined()}
}

func verdictMark(v string) string {
	switch v {
	case VerdictRegression:
		return "▲"
	case VerdictImprovement:
		return "▼"
	case VerdictNoChange:
		return ""
	}
	return "?"
}

// halfWidth is " ± x%", the larger distance from the median to the ends
// of its confidence interval relative to the median, or "" when undefined.
func halfWidth(median Float, ci Interval) string {
	if !median.Defined() || !ci.Low.Defined() || !ci.High.Defined() || median == 0 {
		return ""
	}
	h := math.Max(float64(median-ci.Low), float64(ci.High-median)) / math.Abs(float64(median)) * 100
	return fmt.Sprintf(" ± %.0f%%", math.Ceil(h))
}

// timeScale formats values of a time unit in the prefix that suits a row.
type timeScale struct {
	factor float64 // value × factor = value in the chosen unit
	suffix string  // "ms", "µs", ...; "" for a unit that is not time
}

// timeUnits are the time units perflab and Go benchmarks use, in seconds
// (with or without "/op", which the unit column shows).
var timeUnits = map[string]float64{"s": 1, "sec": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}

// timeScaleFor picks the prefix for a row of unit whose base value is x:
// the largest of s, ms, µs, ns in which x is at least 1.
func timeScaleFor(unit string, x float64) timeScale {
	base, _ := strings.CutSuffix(unit, "/op")
	sec, ok := timeUnits[base]
	if !ok || !(math.Abs(x) > 0) || math.IsInf(x, 0) {
		return timeScale{factor: 1}
	}
	secs := math.Abs(x) * sec
	var sc timeScale
	switch {
	case secs >= 1:
		sc = timeScale{sec, "s"}
	case secs >= 1e-3:
		sc = timeScale{sec / 1e-3, "ms"}
	case secs >= 1e-6:
		sc = timeScale{sec / 1e-6, "µs"}
	default:
		sc = timeScale{sec / 1e-9, "ns"}
	}
	return sc
}

// cellScaleFor is the scale of a row of unit in the two-input table,
// whose values stand beside their unit: a time unit's values in the
// prefix that reads best when it is not the unit's own (0.00271 s as
// 2.71ms), else plain numbers.
func cellScaleFor(unit string, x float64) timeScale {
	if sc := timeScaleFor(unit, x); sc.factor != 1 {
		return sc
	}
	return timeScale{factor: 1}
}

// format formats f in the scale: a time with its prefix, any other value
// with four digits and, since it stands beside its unit, no SI prefix
// below 1 (2.71m under unit s reads as minutes): 0.00271, 2.71e-05.
func (sc timeScale) format(f Float) string {
	if !f.Defined() {
		return fmtNum(f)
	}
	if sc.suffix == "" {
		if a := math.Abs(float64(f)); a > 0 && a < 0.01 {
			return fmt.Sprintf("%.4g", float64(f))
		}
		return fmtNum(f)
	}
	return fmt.Sprintf("%.4g", float64(f)*sc.factor) + sc.suffix
}
