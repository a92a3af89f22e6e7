package analysis

import (
	"fmt"
	"math"
)

// Methods a Decision rests on.
const (
	MethodPaired = "paired: Wilcoxon signed-rank + its Hodges–Lehmann estimate and CI of the log ratio"
	// MethodPairedBootstrap is the paired analysis above maxWalshN pairs.
	MethodPairedBootstrap = "paired: Wilcoxon signed-rank + bootstrap CI of the median log ratio (over 3000 pairs)"
	MethodMannWhitney     = "Mann–Whitney U + bootstrap CI of the median difference"
	MethodWelch           = "Welch t-test + its CI of the mean difference"
)

// Decision is what a metric's verdict rests on: one estimate of the change
// in % of A with its interval, and the test behind it. A change counts as
// significant only when the test (after correction across metrics) and the
// interval agree that it is not 0.
type Decision struct {
	Method    string `json:"method"`
	DeltaPct  Float  `json:"delta_pct"` // the estimate, in % of A
	CILowPct  Float  `json:"ci_low_pct"`
	CIHighPct Float  `json:"ci_high_pct"`
	MDEPct    Float  `json:"mde_pct"` // minimum detectable effect (80% power) at the current n
	// Significant: the test and the interval agree that the change is not 0.
	Significant bool `json:"significant"`
	// BelowThreshold: significant, but smaller than the practical
	// threshold, so neither a regression nor an improvement.
	BelowThreshold bool `json:"below_threshold"`
	// MoreTrials is, for an inconclusive verdict, about how many more
	// trials per arm (pairs, when paired) would decide at the current
	// variance and estimate; undefined when no number would (an estimate
	// of exactly 0, or exactly at the threshold) or the verdict is decided.
	MoreTrials Float `json:"more_trials_per_arm"`
	// CannotDecide, for an inconclusive verdict whose MoreTrials would be
	// past the cap of a sequential run or ten times the current n (and
	// at least maxReasonableMore), says instead why the data cannot
	// decide at any reasonable n: an estimate too close to 0 or to the
	// threshold for the spread. MoreTrials is then undefined.
	CannotDecide string `json:"cannot_decide,omitempty"`
	// N is the trials per arm (pairs, when paired) the decision rests on.
	N int `json:"n"`
	// Confidence is the level of the interval: the report's confidence,
	// or for a metric corrected with others (k of them) 1 − (1 −
	// confidence)/k, the simultaneous level its corrected test is judged
	// at (familyLevels).
	Confidence float64 `json:"confidence"`
}

// decisionBasis fills the estimate, interval and MDE of the primary
// method; decide adds the rest once p-values are corrected.
func decisionBasis(m MetricResult, opt Options) Decision {
	d := Decision{DeltaPct: undefined(), CILowPct: undefined(), CIHighPct: undefined(), MDEPct: m.MDEPct,
		MoreTrials: undefined(), N: min(m.A.N, m.B.N), Confidence: opt.Confidence}
	switch {
	case opt.Sequential && m.Sequential != nil:
		s := m.Sequential
		d.Method = MethodSequential
		d.DeltaPct, d.CILowPct, d.CIHighPct = s.DeltaPct, s.CILowPct, s.CIHighPct
		d.MDEPct, d.N = m.Paired.MDEPct, s.N
	case m.Paired != nil:
		d.Method = MethodPaired
		d.DeltaPct, d.CILowPct, d.CIHighPct = m.Paired.Estimate(), m.Paired.CILowPct, m.Paired.CIHighPct
		if m.Paired.CIShort {
			// Below the confidence asked for: not shown as if it had it
			// (AnalyzePaired's warning says why).
			d.CILowPct, d.CIHighPct = undefined(), undefined()
		}
		if m.Paired.CIMethod == CIMethodBootstrapMedian {
			d.Method = MethodPairedBootstrap
		}
		d.MDEPct, d.N = m.Paired.MDEPct, m.Paired.N
	case opt.Test == TestWelch:
		d.Method = MethodWelch
		d.DeltaPct = m.DeltaPctMean
		if m.A.Mean.Defined() && m.A.Mean != 0 {
			am := math.Abs(float64(m.A.Mean))
			d.CILowPct = defined(float64(m.Welch.CILow) / am * 100)
			d.CIHighPct = defined(float64(m.Welch.CIHigh) / am * 100)
		}
	default:
		d.Method = MethodMannWhitney
		d.DeltaPct = m.DeltaPctMedian
		d.CILowPct, d.CIHighPct = m.Bootstrap.PctLow, m.Bootstrap.PctHigh
	}
	return d
}

// decide gives a comparable metric its verdict from the corrected p-value
// and the interval of its Decision, with the practical threshold:
//
//   - regression / improvement: the test is significant, the interval
//     excludes 0 on the same side, and the estimate is at least the
//     threshold;
//   - no change: the whole interval lies within ±threshold (equivalence);
//     a significant change below the threshold is noted as such;
//   - inconclusive: anything else, with about how many more trials would
//     decide.
func decide(m *MetricResult, opt Options) string {
	d := &m.Decision
	d.MoreTrials = undefined()
	thr := opt.ThresholdPct
	if d.Method == MethodSequential {
		return decideSequential(m, opt)
	}
	lo, hi, est := d.CILowPct, d.CIHighPct, d.DeltaPct
	if !m.PAdjusted.Defined() || !lo.Defined() || !hi.Defined() || !est.Defined() {
		if m.PAdjusted.Defined() && (m.Paired == nil || !m.Paired.CIShort) {
			m.Warnings = append(m.Warnings, "the interval of the relative change is undefined: no verdict")
		}
		return VerdictInconclusive
	}
	significant := float64(m.PAdjusted) < opt.Alpha
	side := 0.0 // the side of 0 the interval excludes
	switch {
	case lo > 0:
		side = 1
	case hi < 0:
		side = -1
	}
	switch {
	case significant && side == 0:
		m.Warnings = append(m.Warnings, "the test is significant but the interval includes 0: not counted as a change")
	case !significant && side != 0:
		m.Warnings = append(m.Warnings, fmt.Sprintf("the interval [%+.2f%%, %+.2f%%] excludes 0 but the test is not significant (p adj %s): not counted as a change",
			float64(lo), float64(hi), FormatP(float64(m.PAdjusted), opt.Alpha, 3)))
	case significant && est != 0 && math.Signbit(float64(est)) != (side < 0):
		m.Warnings = append(m.Warnings, "the estimate lies on the other side of 0 than its interval: not counted as a change")
		side = 0
	}
	d.Significant = significant && side != 0
	within := thr > 0 && float64(lo) > -thr && float64(hi) < thr
	switch {
	case d.Significant && math.Abs(float64(est)) >= thr:
		worse := side > 0
		if m.Better == BetterHigher {
			worse = !worse
		}
		if worse {
			return VerdictRegression
		}
		return VerdictImprovement
	case d.Significant:
		d.BelowThreshold = true
		if within {
			return VerdictNoChange
		}
	case within:
		return VerdictNoChange
	}
	setMoreTrials(d, thr, 0)
	if !significant && side != 0 {
		// An interval that excludes 0 is not shown beside a verdict
		// its test does not reach (issue 25); the warning above keeps
		// it. Intervals dual to their test at the family's level
		// (familyLevels) make this rare: the unpaired bootstrap is not
		// dual to the Mann–Whitney test.
		d.CILowPct, d.CIHighPct = undefined(), undefined()
	}
	return VerdictInconclusive
}

// maxReasonableMore is the fewest more trials per arm (pairs) that
// setMoreTrials calls unreasonable without a cap: ten times n only counts
// past it, so that 3 trials per arm needing 40 more is still advice.
const maxReasonableMore = 500

// setMoreTrials fills d.MoreTrials, about how many more trials per arm
// (pairs) would decide (moreTrials), or d.CannotDecide when that number is
// no advice: past the rounds left to cap (a sequential run's max_trials,
// when cap > 0: "max_trials (30) is too few: about 10 more rounds would
// decide"), or past max(10·n, maxReasonableMore), where the data cannot
// decide at any reasonable n (issue 25: "about 485990 more rounds would
// decide"). The two are told apart, so that a row never says both that
// no reasonable n decides and that a few more rounds would (issue 35).
func setMoreTrials(d *Decision, thr float64, cap int) {
	d.MoreTrials, d.CannotDecide = undefined(), ""
	lo, hi, est := float64(d.CILowPct), float64(d.CIHighPct), float64(d.DeltaPct)
	need := moreTrials(lo, hi, est, thr, d.N)
	if !need.Defined() {
		return
	}
	reasonable := float64(need) <= max(10*float64(d.N), maxReasonableMore)
	if cap <= 0 && reasonable || cap > 0 && float64(need) <= float64(cap-d.N) {
		d.MoreTrials = need
		return
	}
	unit := "trials per arm"
	switch d.Method {
	case MethodPaired, MethodPairedBootstrap, MethodSequential:
		unit = "rounds"
	}
	if reasonable {
		d.CannotDecide = fmt.Sprintf("max_trials (%d) is too few: about %.0f more %s would decide at the current spread (interval ±%.2f%% at n = %d); raise max_trials to decide it",
			cap, float64(need), unit, (hi-lo)/2, d.N)
		return
	}
	toward := "0"
	if math.Abs(est) < thr {
		toward = fmt.Sprintf("the threshold ±%g%%", thr)
	}
	d.CannotDecide = fmt.Sprintf("the data cannot decide at any reasonable n: the estimate %+.2f%% is too close to %s for the spread (interval ±%.2f%% at n = %d); it would take about %.0f more %s",
		est, toward, (hi-lo)/2, d.N, float64(need), unit)
}

// moreTrials estimates how many more trials per arm would decide, assuming
// the estimate and the variance stay as they are and the interval shrinks
// as 1/√n: to a regression or improvement when |estimate| ≥ threshold (the
// interval must exclude 0: half-width below |estimate|), else to no change
// (half-width below threshold − |estimate|).
func moreTrials(lo, hi, est, thr float64, n int) Float {
	half := (hi - lo) / 2
	target := math.Abs(est) - thr
	if math.Abs(est) >= thr {
		target = math.Abs(est)
	} else {
		target = -target
	}
	if !(target > 0) || !(half > 0) || n < 1 {
		return undefined()
	}
	need := float64(n) * (half / target) * (half / target)
	return defined(math.Max(1, math.Ceil(need-float64(n))))
}

// decideSequential takes the verdict of the sequential analysis
// (SequentialVerdict at the metric's corrected p), else inconclusive.
func decideSequential(m *MetricResult, opt Options) string {
	s, d := m.Sequential, &m.Decision
	if m.familySeq != nil {
		s = m.familySeq // the interval at the family's level
	}
	d.Significant = s.CILowPct.Defined() && (s.CILowPct > 0 || s.CIHighPct < 0)
	if d.Significant && s.DeltaPct.Defined() && math.Abs(float64(s.DeltaPct)) < opt.ThresholdPct {
		d.BelowThreshold = true
	}
	v, held := SequentialVerdict(*s, m.PAdjusted, opt.Alpha)
	if v != VerdictInconclusive {
		return v
	}
	if held != "" {
		m.Warnings = append(m.Warnings, held)
	}
	if d.CILowPct.Defined() && d.DeltaPct.Defined() {
		setMoreTrials(d, opt.ThresholdPct, opt.SequentialMaxRounds)
	}
	return VerdictInconclusive
}

// SequentialVerdict is the one decision of a sequential analysis s whose
// p-value, corrected within its family (family.go), is pAdjusted: the
// stop rule of "stop": "auto" stops a run exactly when it is not
// inconclusive for the primary metric (a family of one at the full α, so
// pAdjusted is s.P), and the report, the panels and bisect give each
// metric this verdict.
//
//   - regression / improvement: the sequential interval excludes 0 with
//     the estimate at least the threshold (s.Decision), and the corrected
//     p is at most α (≤: the sequential p is at most α exactly when its
//     interval excludes 0, and a run stopped right at the boundary has
//     p = α);
//   - no change: the sequential interval lies within ±threshold;
//   - inconclusive: anything else; held says what held back a change
//     that the interval alone would have called.
func SequentialVerdict(s Sequential, pAdjusted Float, alpha float64) (verdict, held string) {
	switch s.Decision {
	case VerdictRegression, VerdictImprovement:
		if pAdjusted.Defined() && float64(pAdjusted) <= alpha {
			return s.Decision, ""
		}
		return VerdictInconclusive, "the sequential p is above alpha after correction across the secondary metrics"
	case VerdictNoChange:
		return s.Decision, ""
	}
	return VerdictInconclusive, ""
}
