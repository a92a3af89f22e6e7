package analysis

import "math"

// familyAlpha is the level a single metric's test must reach for the
// verdict when k metrics are tested: alpha/k under Bonferroni, and under
// Holm too, whose first step (the one a lone real effect among null
// metrics must pass) is alpha/k; alpha without correction.
func familyAlpha(alpha float64, k int, correction string) float64 {
	if k < 2 || correction == CorrectionNone {
		return alpha
	}
	return alpha / float64(k)
}

// correctMDEs recomputes every tested metric's minimum detectable effect
// at the level of its family (familyAlpha of the family's size k), once k
// is known (issue 16 item 9: it used the raw alpha).
func correctMDEs(ms []MetricResult, fam family, opt Options) {
	type size struct {
		n     int
		alpha float64
	}
	quantiles := map[size]float64{} // a suite's hundreds of metrics share a few
	for i := range ms {
		m := &ms[i]
		fa := familyAlpha(opt.Alpha, max(1, fam.k(i)), opt.Correction)
		if opt.Correction == CorrectionWeightedBH && fam.k(i) >= 2 {
			// A lone change among null tests: R = 1, its level
			// α·min(1, w_i/k).
			// A weight of 0 is never rejected: its MDE is that of
			// the smallest level a float holds.
			fa = math.Max(opt.Alpha*math.Min(1, fam.weight[i]/float64(fam.k(i))), 1e-300)
		}
		if m.moments != nil {
			m.MDEPct = mdeFrom(*m.moments, fa, PowerTarget, opt.Test)
		}
		if m.Paired != nil && m.Paired.logSD > 0 {
			k := size{m.Paired.N, fa}
			q, ok := quantiles[k]
			if !ok {
				q = pairedMDEQuantiles(k.n, k.alpha)
				quantiles[k] = q
			}
			m.Paired.MDEPct = pairedMDEAt(q, m.Paired.logSD, m.Paired.N)
		}
		switch m.Decision.Method {
		case MethodPaired, MethodPairedBootstrap, MethodSequential:
			if m.Paired != nil {
				m.Decision.MDEPct = m.Paired.MDEPct
			}
			if s := m.Sequential; m.Decision.Method == MethodSequential && s != nil && s.trimmedSD > 0 && s.N >= 2 {
				// The trimmed mean's own spread, as the paired t
				// test's (no rank efficiency to divide by).
				q := pairedMDEQuantiles(s.N, fa)
				m.Decision.MDEPct = defined(math.Expm1(q*s.trimmedSD/math.Sqrt(float64(s.N))) * 100)
			}
		default:
			m.Decision.MDEPct = m.MDEPct
		}
	}
}

// areRankNormal is the Pitman asymptotic relative efficiency of the
// Wilcoxon rank-sum (Mann–Whitney) and signed-rank tests against the t
// tests under normal errors, 3/π ≈ 0.955 (Lehmann 1975, Nonparametrics:
// Statistical Methods Based on Ranks, ch. 2.4; Noether 1987, "Sample size
// determination for some common nonparametric tests", JASA 82: 645–647):
// the rank test needs 1/0.955 times the t test's sample for the same
// power, so its minimum detectable effect is √(π/3) ≈ 1.023 times the t
// test's. Checked by simulation in TestMDEPowerSimulation.
const areRankNormal = 3 / math.Pi

// PowerTarget is the power perflab asks of a setup (Cohen's convention of
// 80%): minimum detectable effects are computed for it, and validation
// fails when a known effect is detected in a smaller share of experiments.
const PowerTarget = 0.8

// MinDetectableEffect returns the smallest difference of means, in % of
// |mean A|, that a two-sided Welch test at level alpha would detect with
// the given power at the current sample sizes and standard deviations:
// (t₁₋α/₂ + t_power)·SE/|mean A|·100 with the Welch–Satterthwaite degrees
// of freedom. It is undefined with fewer than 2 values per arm, zero
// variance or a zero mean of A. Compare reports it for the primary test at
// the level corrected across metrics (MetricResult.MDEPct): the Mann–Whitney
// test's is √(π/3) times this (areRankNormal).
func MinDetectableEffect(a, b []float64, alpha, power float64) Float {
	if len(a) < 2 || len(b) < 2 {
		return undefined()
	}
	return mdeFrom(welchMoments(a, b), alpha, power, TestWelch)
}

// mdeFrom is the minimum detectable effect of test from the moments of
// samples of at least 2 values: Welch's, divided by √ARE for the
// Mann–Whitney test.
func mdeFrom(p welchParts, alpha, power float64, test string) Float {
	if p.se2 == 0 || p.ma == 0 {
		return undefined()
	}
	mde := (studentTQuantile(1-alpha/2, p.df) + studentTQuantile(power, p.df)) * math.Sqrt(p.se2) / math.Abs(p.ma) * 100
	if test != TestWelch {
		mde /= math.Sqrt(areRankNormal)
	}
	return defined(mde)
}
