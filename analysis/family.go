package analysis

import (
	"fmt"
	"math"
)

// The family of hypotheses: one rule behind every verdict perflab prints
// (the stop rule, compare, report, replay, the live panels, validate,
// order, bisect, pools), decided here and nowhere else.
//
//   - A metric is a member of the family only when it can be tested: each
//     arm has at least 2 values (or the metric has pairs), its primary
//     test's p-value is defined, and it is not the same constant in both
//     arms (nor every pair B = A). A metric that cannot be tested is
//     inconclusive, says why, and takes no share of α.
//   - With a primary metric (Options.Primary: a session's "primary", else
//     the first metric it lists or records), the primary's test is a family
//     of its own, at the full α: it is the hypothesis the stop rule of
//     "stop": "auto" watches, and the question the experiment was run to
//     answer. The other members are corrected among themselves (Holm's
//     step-down by default, Options.Correction), so each secondary metric
//     is still protected against the number of metrics looked at.
//   - Without a primary (compare of samples), every member is corrected
//     together.
//
// Why a primary at full α rather than α/k for the stop rule: a
// group-sequential design must fix its α before the first look (its
// boundaries are spent from it round by round), and k, the number of
// testable metrics, is known only from the data (a metric that turns out
// constant leaves the family). Naming one primary hypothesis in advance is
// the confirmatory-trial convention (ICH E9, "Statistical principles for
// clinical trials", 1998, §2.2.2 and §5.6: one primary variable, the
// multiplicity of secondary ones handled separately); it keeps what stops
// a run exactly what the report prints for it.
type family struct {
	group []int  // per metric: famNone, famPrimary or famSecondary
	size  [2]int // members of the primary and the secondary family
	// weight is each member's weight under CorrectionWeightedBH, rescaled
	// to average 1 over its family (1 for every member without weights).
	weight []float64
}

const (
	famNone      = -1
	famPrimary   = 0
	famSecondary = 1
)

// untestedReason says why a metric cannot be a member of the family, or ""
// when it can; ps[i] is its primary p-value.
func untestedReason(m MetricResult, p Float) string {
	switch {
	case m.untested != "":
		return m.untested
	case (m.A.N < 2 || m.B.N < 2) && m.Paired == nil:
		return "fewer than 2 values in an arm"
	case !p.Defined():
		return "its test is undefined"
	}
	return ""
}

// familyOf sorts the metrics (with their primary p-values ps) into the
// family: the testable ones named primary into the primary family, the
// other testable ones into the secondary family.
func familyOf(ms []MetricResult, ps []Float, primary string) family {
	f := family{group: make([]int, len(ms))}
	for i, m := range ms {
		g := famNone
		switch {
		case untestedReason(m, ps[i]) != "":
		case primary != "" && m.Name == primary:
			g = famPrimary
		default:
			g = famSecondary
		}
		f.group[i] = g
		if g != famNone {
			f.size[g]++
		}
	}
	f.weight = make([]float64, len(ms))
	for g := famPrimary; g <= famSecondary; g++ {
		sum := 0.0
		for i, m := range ms {
			if f.group[i] == g && m.weight > 0 && !math.IsInf(m.weight, 1) {
				sum += m.weight
			}
		}
		for i, m := range ms {
			switch {
			case f.group[i] != g:
			case sum == 0:
				f.weight[i] = 1
			case m.weight > 0 && !math.IsInf(m.weight, 1):
				f.weight[i] = m.weight * float64(f.size[g]) / sum
			}
		}
	}
	return f
}

// adjust corrects ps within each family (the primary's at full α when it
// has one member, else by the correction among its members; under
// CorrectionWeightedBH with the family's weights).
func (f family) adjust(ps []Float, ms []MetricResult, correction string) []Float {
	out := make([]Float, len(ps))
	for i := range out {
		out[i] = undefined()
	}
	for g := famPrimary; g <= famSecondary; g++ {
		sub := make([]Float, len(ps))
		for i := range sub {
			sub[i] = undefined()
			if f.group[i] == g {
				sub[i] = ps[i]
			}
		}
		adj := Adjust(sub, correction)
		if correction == CorrectionWeightedBH {
			adj = AdjustWeighted(sub, f.weight)
		}
		for i, p := range adj {
			if f.group[i] == g {
				out[i] = p
			}
		}
	}
	return out
}

// k is the size of metric i's family (0 for a non-member).
func (f family) k(i int) int {
	if f.group[i] == famNone {
		return 0
	}
	return f.size[f.group[i]]
}

// members counts the tests of both families.
func (f family) members() int { return f.size[famPrimary] + f.size[famSecondary] }

// FamilyText says, for a table's heading, how the family was corrected:
// "primary startup_ms at alpha 0.05; holm correction across 2 other tested
// metrics, alpha 0.05", or without a primary "holm correction across 3
// tested metrics, alpha 0.05".
func FamilyText(r Report) string {
	primary, others := 0, 0
	for _, m := range r.Metrics {
		switch {
		case !m.PAdjusted.Defined():
		case r.Primary != "" && m.Name == r.Primary:
			primary++
		default:
			others++
		}
	}
	plural := func(n int) string {
		if n == 1 {
			return ""
		}
		return "s"
	}
	if primary == 0 {
		return fmt.Sprintf("%s correction across %d tested metric%s, alpha %g", r.Correction, others, plural(others), r.Alpha)
	}
	s := fmt.Sprintf("primary %s at alpha %g", r.Primary, r.Alpha)
	if others > 0 {
		s += fmt.Sprintf("; %s correction across %d other tested metric%s", r.Correction, others, plural(others))
	}
	return s
}

// TestedP is the p-value a row shows for m: its primary test's (the
// sequential one when that decides), the same p that its adjusted p
// corrects; undefined for a metric that is no member of the family (no
// test was counted for it). Table, the workbench and replay all show it,
// so that p and p adj in a row belong to one test and p adj ≥ p.
func TestedP(m MetricResult, test string) Float {
	if !m.PAdjusted.Defined() {
		return undefined()
	}
	return primaryP(m, test)
}

// FamilyShort is FamilyText for a panel title: "primary startup_ms",
// "primary startup_ms, holm for the rest" or "holm correction".
func FamilyShort(r Report) string {
	if r.Primary == "" {
		return r.Correction + " correction"
	}
	for _, m := range r.Metrics {
		if m.Name != r.Primary && m.PAdjusted.Defined() {
			return fmt.Sprintf("primary %s, %s for the rest", r.Primary, r.Correction)
		}
	}
	return "primary " + r.Primary
}

// familyLevels gives each secondary metric corrected with others (k ≥ 2
// members, a correction other than none) its interval at the simultaneous
// level 1 − (1 − confidence)/k (Bonferroni's, Holm's first step), so that
// the interval and the corrected test agree: an interval that excludes 0
// at that level has p < α/k, which Holm's and Bonferroni's corrections
// both reject (issue 25: a 95% interval excluding 0 stood beside an
// inconclusive verdict whose corrected p was 0.098). Dual pairs: the
// signed-rank test and its interval, the sequential p and interval,
// Welch's test and interval; the Mann–Whitney test's bootstrap interval is
// not dual, and decide leaves out an interval that still disagrees.
//
// Under weighted Benjamini–Hochberg, metric i's level is 1 − min(1,
// w_i·R/k)·(1 − confidence), its own threshold's share (AdjustWeighted).
// Under Benjamini–Hochberg the level is the false-coverage-rate one of
// Benjamini & Yekutieli (2005, "False discovery rate–adjusted multiple
// confidence intervals for selected parameters", JASA 100: 71–81),
// 1 − R·(1 − confidence)/k for the R changes it reports (1 when none):
// the reported ones have p ≤ Rα/k, the others p > Rα/k, so dual intervals
// agree with BH's decisions too. adj holds the corrected p-values.
func familyLevels(ms []MetricResult, fam family, adj []Float, opt Options) {
	k := fam.size[famSecondary]
	if k < 2 || opt.Correction == CorrectionNone {
		return
	}
	share := 1.0
	if opt.Correction == CorrectionBH || opt.Correction == CorrectionWeightedBH {
		r := 0
		for i, p := range adj {
			if fam.group[i] == famSecondary && p.Defined() && float64(p) <= opt.Alpha {
				r++
			}
		}
		share = float64(max(r, 1))
	}
	level := 1 - (1-opt.Confidence)*share/float64(k)
	for i := range ms {
		if fam.group[i] == famSecondary {
			l := level
			if opt.Correction == CorrectionWeightedBH {
				// Weighted: test i's level is α·min(1, w_i·R/k)
				// (AdjustWeighted), its interval's the same share of
				// 1 − confidence.
				l = 1 - (1-opt.Confidence)*math.Min(1, fam.weight[i]*share/float64(k))
			}
			atLevel(&ms[i], l, k, opt)
		}
	}
}

// atLevel recomputes m's Decision interval at the confidence level.
// k is the size of its family.
func atLevel(m *MetricResult, level float64, k int, opt Options) {
	d := &m.Decision
	pct := func(x float64) Float { return defined(math.Expm1(x) * 100) }
	switch d.Method {
	case MethodPaired:
		pr := m.Paired
		if pr == nil || pr.sr == nil || !d.CILowPct.Defined() {
			return
		}
		d.Confidence = level
		if signedRankK(*pr.sr, level) < 1 {
			d.CILowPct, d.CIHighPct = undefined(), undefined()
			m.Warnings = append(m.Warnings, fmt.Sprintf("no interval shown, collect more rounds: with %d non-zero pairs no signed-rank interval reaches %.4g%%, the level of a metric corrected with %d others",
				len(pr.sr.nonzero), level*100, k-1))
			return
		}
		if lo, hi, ok := signedRankCI(*pr.sr, level); ok {
			d.CILowPct, d.CIHighPct = pct(lo), pct(hi)
		}
	case MethodSequential:
		if m.logRatios == nil {
			return
		}
		// The sequential interval's level is its own α's: α/k here
		// (α·R/k under BH), the same share of it as of 1 − confidence.
		so := m.seqOpt
		so.Alpha *= (1 - level) / (1 - opt.Confidence)
		s, ok := m.atFamily.get(so.Alpha)
		if !ok {
			st := newSequentialTest(so, opt.Designs.design(so))
			for _, x := range m.logRatios {
				st.Add(x)
			}
			// Only the interval and its decision are wanted at this
			// level: the p corrected with the others stays the test's
			// own, so its p at this level (a search over designs, most
			// of a suite's analysis) is not computed.
			s = st.result(false)
			s.P = m.Sequential.P
			m.atFamily.set(so.Alpha, s)
		}
		m.familySeq = &s
		d.CILowPct, d.CIHighPct, d.Confidence = s.CILowPct, s.CIHighPct, 1-so.Alpha
	case MethodWelch:
		if m.moments == nil || !m.A.Mean.Defined() || m.A.Mean == 0 {
			return
		}
		w, _ := welchFrom(*m.moments, level)
		am := math.Abs(float64(m.A.Mean))
		d.CILowPct, d.CIHighPct, d.Confidence = defined(float64(w.CILow)/am*100), defined(float64(w.CIHigh)/am*100), level
	case MethodMannWhitney:
		if m.Bootstrap.pcts == nil {
			return
		}
		lowP := (1 - level) / 2
		d.CILowPct = defined(quantileSelect(m.Bootstrap.pcts, lowP))
		d.CIHighPct = defined(quantileSelect(m.Bootstrap.pcts, 1-lowP))
		d.Confidence = level
	}
}
