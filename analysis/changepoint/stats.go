package changepoint

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/mathext"

	"github.com/perflab/perflab/analysis"
)

// arInflation is the factor by which lag-1 autocorrelation rho multiplies
// the variance of the difference of the means of two adjacent segments of
// m and k points of an AR(1) series, against independent points:
// Σ_s Σ_t c_s c_t ρ^|s−t| / Σ_t c_t² with c = 1/m on the first segment
// and −1/k on the second. It is the effective-sample-size correction of
// Bayley and Hammersley ("The 'effective' number of independent
// observations in an autocorrelated time series", JRSS Supplement 8(2),
// 1946; Zwiers and von Storch, "Taking serial correlation into account in
// tests of the mean", Journal of Climate 8, 1995) written for the
// two-sample contrast, so that short segments (where it is below the
// long-run (1+ρ)/(1−ρ)) and the positive covariance of the two sides'
// neighbouring points are both accounted for. The trimmed t (trimmedT)
// applies it to the difference of trimmed means, whose variance the
// trimming changes little for Gaussian noise, where the
// generalised-least-squares test cannot be fitted (tester.p).
func arInflation(m, k int, rho float64) float64 {
	if rho == 0 {
		return 1
	}
	// g_t = Σ_{s<t} c_s ρ^{t−s}, carried along the series.
	var g, quad, sq float64
	c := 1 / float64(m)
	for t := range m + k {
		if t == m {
			c = -1 / float64(k)
		}
		quad += c*c + 2*c*g
		sq += c * c
		g = rho * (g + c)
	}
	return quad / sq
}

// maxSplitP is the p of a standard normal statistic |z| that is the
// largest among the splits of a segment of n points leaving minSeg on
// each side, as the split tested was chosen where the two sides looked
// most different: the smaller of Bonferroni's bound over the
// n − 2·minSeg + 1 splits and Lausen and Schumacher's approximation for
// maximally selected statistics, a Brownian bridge's standardised maximum
// ("Maximally selected rank statistics", Biometrics 48, 1992, after
// Miller and Siegmund 1982),
//
//	P(max |S| ≥ b) ≈ φ(b)·(b − 1/b)·log(ε₂(1−ε₁)/((1−ε₂)ε₁)) + 4φ(b)/b,
//
// with ε₁ = minSeg/n and ε₂ = 1 − ε₁ the outermost split proportions. The
// split is E-divisive's, not the one of largest |z|, so this errs on the
// safe side.
func maxSplitP(z float64, n, minSeg int) float64 {
	b := math.Abs(z)
	if math.IsInf(b, 1) {
		return 0
	}
	splits := float64(n - 2*minSeg + 1)
	bonf := splits * math.Erfc(b/math.Sqrt2)
	p := bonf
	if e1 := float64(minSeg) / float64(n); e1 < 0.5 && b > 1 {
		e2 := 1 - e1
		phi := math.Exp(-b*b/2) / math.Sqrt(2*math.Pi)
		ls := phi*(b-1/b)*math.Log(e2*(1-e1)/((1-e2)*e1)) + 4*phi/b
		p = math.Min(p, ls)
	}
	return math.Min(1, p)
}

// residualRho estimates the lag-1 autocorrelation of the noise of xs
// around the levels of the segments cut at cps: the residuals from each
// segment's median, lag products taken only within a segment, and the
// residuals more than 3 robust standard deviations (1.4826 × their
// median absolute deviation) out left out, each with its lag products, as
// missing values: an outlier is noise of its own, independent of its
// neighbours, and counted (even winsorised) it drew the estimate down,
// to 0.58 for φ 0.7 in the study's series with slow outliers (0.68 left
// out), which hid nothing but let the wander of the noise pass for steps.
// The estimate is biased down by about (1+4ρ)/L in segments of L points
// whose level was estimated (M. G. Kendall, "Note on bias in the
// estimation of autocorrelation", Biometrika 41, 1954; Marriott and Pope
// 1954), which is added back; the result is clipped to [0, maxRho].
func residualRho(xs []float64, cps []int) float64 {
	n := len(xs)
	if n < 3 {
		return 0
	}
	res := make([]float64, 0, n)
	for k := 0; k <= len(cps); k++ {
		lo, hi := bounds(cps, k, n)
		if k < len(cps) {
			hi = cps[k]
		}
		seg := xs[lo:hi]
		m := median(seg)
		for _, x := range seg {
			res = append(res, x-m)
		}
	}
	s := madSigma(res, 0)
	if s == 0 {
		return 0
	}
	out := make([]bool, n)
	for i, r := range res {
		out[i] = math.Abs(r) > 3*s
	}
	cut := make([]bool, n)
	for _, c := range cps {
		cut[c] = true
	}
	var num, den, pairs, vals float64
	for i, r := range res {
		if out[i] {
			continue
		}
		den += r * r
		vals++
		if i > 0 && !cut[i] && !out[i-1] {
			num += r * res[i-1]
			pairs++
		}
	}
	if pairs == 0 {
		return 0
	}
	num, den = num/pairs, den/vals
	if den == 0 {
		return 0
	}
	rho := num / den
	// E[ρ̂] ≈ ρ − (1+4ρ)·segments/n: solve for ρ.
	if f := float64(len(cps)+1) / float64(n); 4*f < 0.5 {
		rho = (rho + f) / (1 - 4*f)
	}
	return math.Max(0, math.Min(maxRho, rho))
}

// maxRho caps the estimated autocorrelation: beyond it the series is
// closer to a random walk than to noise around a level, and the variance
// factor (19 at 0.9) would hide every step.
const maxRho = 0.9

// trendExplains tells whether a straight line fitted to xs[lo:hi] by
// least squares leaves no more squared error than the step at tau (each
// side at its mean): a slow drift cut in two looks like a step to a test
// of the two sides, but a line fits it at least as well, while a step is
// fitted by a line only to about a quarter of its variance. The values
// are winsorised first (at 3 robust standard deviations of the residuals
// from each side's median) so that one outlier does not decide.
func trendExplains(xs []float64, lo, tau, hi int) bool {
	seg := slices.Clone(xs[lo:hi])
	m := tau - lo
	ma, mb := median(seg[:m]), median(seg[m:])
	lvl := func(i int) float64 {
		if i < m {
			return ma
		}
		return mb
	}
	dev := make([]float64, len(seg))
	for i, x := range seg {
		dev[i] = x - lvl(i)
	}
	if s := madSigma(dev, 0); s > 0 {
		for i := range seg {
			seg[i] = lvl(i) + math.Max(-3*s, math.Min(3*s, dev[i]))
		}
	}
	a, b := seg[:m], seg[m:]
	var stepSS float64
	for _, part := range [][]float64{a, b} {
		mu := mean(part)
		for _, x := range part {
			stepSS += (x - mu) * (x - mu)
		}
	}
	n := float64(len(seg))
	tm, ym := (n-1)/2, mean(seg)
	var sty, stt float64
	for i, y := range seg {
		sty += (float64(i) - tm) * (y - ym)
		stt += (float64(i) - tm) * (float64(i) - tm)
	}
	slope := sty / stt
	var lineSS float64
	for i, y := range seg {
		r := y - ym - slope*(float64(i)-tm)
		lineSS += r * r
	}
	return lineSS <= stepSS
}

// diffRho is a first estimate of the noise's lag-1 autocorrelation that
// needs no levels: for AR(1) noise of variance σ², the differences at lag
// 1 and 2 have variances 2σ²(1−ρ) and 2σ²(1−ρ²), whose ratio is 1+ρ. A
// step or an outlier makes only one or two large differences, so the
// largest tenth of each (at least 2) is trimmed before the mean of squares (the
// trimming scales both alike for Gaussian noise, so the ratio needs no
// correction). Clipped to [0, maxRho]; 0 below 10 points.
func diffRho(xs []float64) float64 {
	n := len(xs)
	if n < 10 {
		return 0
	}
	sq := func(lag int) float64 {
		d := make([]float64, n-lag)
		for i := range d {
			d[i] = (xs[i+lag] - xs[i]) * (xs[i+lag] - xs[i])
		}
		slices.Sort(d)
		return mean(d[:len(d)-max(2, len(d)/10)])
	}
	v1 := sq(1)
	if v1 == 0 {
		return 0
	}
	return math.Max(0, math.Min(maxRho, sq(2)/v1-1))
}

// trim is the share of each side's values trimmed at either end by
// trimmedT: 20%, the usual choice (Wilcox, Introduction to Robust
// Estimation and Hypothesis Testing, 2012, §5.3).
const trim = 0.2

// trimmedT is the two-sample trimmed t of a = xs[lo:tau] against b =
// xs[tau:hi] with a pooled variance (K. K. Yuen and W. J. Dixon, "The
// approximate behaviour and performance of the two-sample trimmed t",
// Biometrika 60, 1973; Yuen 1974 for the unequal-variance form): the
// difference of the 20% trimmed means over
// √(SSD_w/(h_a+h_b−2) · (1/h_a + 1/h_b)), SSD_w the two samples' sums of
// squared deviations once winsorised as much as they were trimmed and h
// the values kept, on h_a + h_b − 2 degrees of freedom; as
// scipy.stats.ttest_ind(a, b, trim=0.2) (equal_var=True). The trimming
// makes one far-off build on a side count for no more than the values
// trimmed, where it would widen a t-test's variance past any step; unlike
// a rank statistic it still grows with the step, so a large step with few
// builds on one side remains clear. The variance is pooled because the
// noise of one benchmark is much the same on both sides of a step: with
// Welch's separate variances (Yuen 1974) the few degrees of freedom of a
// short side cost the study a third of the steps 6 to 9 builds from an
// end (recall 0.30 against 0.67 at φ 0, docs/history.md). ok is false
// when both sides are constant.
func trimmedT(xs []float64, lo, tau, hi int) (t, df float64, ok bool) {
	ta, da, ha, _ := trimmed(xs[lo:tau])
	tb, db, hb, _ := trimmed(xs[tau:hi])
	// SSD_w of each side: d·h·(h−1), d = SSD_w/(h(h−1)).
	ss := da*ha*(ha-1) + db*hb*(hb-1)
	df = ha + hb - 2
	se2 := ss / df * (1/ha + 1/hb)
	if se2 == 0 {
		return 0, 0, false
	}
	return (tb - ta) / math.Sqrt(se2), df, true
}

// trimmed returns the trimmed mean of xs, Yuen's d = SSD_w/(h(h−1)) (the
// squared standard error of the trimmed mean), h, the number of values
// kept, and SSD_w, the sum of squared deviations of the Winsorized values
// (analysis.Winsorized).
func trimmed(xs []float64) (tm, d, h, ssw float64) {
	tm, ssw, kept := analysis.Winsorized(slices.Sorted(slices.Values(xs)), trim)
	h = float64(kept)
	return tm, ssw / (h * (h - 1)), h, ssw
}

// tToZ is the standard normal z with the same two-sided tail as Student's
// t with df degrees of freedom: P(|T| > |t|) = 2·(1 − Φ(z)), through the
// regularised incomplete beta function, P(|T| > t) = I_{df/(df+t²)}(df/2, ½),
// and the normal quantile of Wichura's AS 241 (mathext.NormalQuantile),
// accurate in the far tail where 1 − p/2 is 1 in float64.
func tToZ(t, df float64) float64 {
	p := mathext.RegIncBeta(df/2, 0.5, df/(df+t*t))
	if p <= 0 {
		return math.Inf(1)
	}
	return -mathext.NormalQuantile(p / 2)
}
