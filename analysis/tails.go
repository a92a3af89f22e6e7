package analysis

import (
	"math"

	"gonum.org/v1/gonum/mathext"
)

// normalSF is the upper tail P(Z > z) of the standard normal, as
// scipy.stats.norm.sf: ½·erfc(z/√2) keeps full relative accuracy far into
// the tail, where ½·(1 − erf(z/√2)) (gonum's Normal.Survival) loses digits
// from z ≈ 5 on and is 0 beyond z ≈ 8.3.
func normalSF(z float64) float64 { return 0.5 * math.Erfc(z/math.Sqrt2) }

// normalTwoSided is the two-sided p-value of a standard normal statistic,
// 2·P(Z > |z|), at most 1.
func normalTwoSided(z float64) float64 { return math.Min(1, 2*normalSF(math.Abs(z))) }

// studentTSF is the upper tail P(T > t) of Student's t with df degrees of
// freedom, as scipy.stats.t.sf: for t > 0 it is ½·I_{df/(df+t²)}(df/2, ½)
// (Abramowitz & Stegun 26.7.1), taken directly rather than as 1 − CDF so
// tiny tails keep their relative accuracy.
func studentTSF(t, df float64) float64 {
	switch {
	case math.IsNaN(t) || !(df > 0):
		return math.NaN()
	case t == 0:
		return 0.5
	case t < 0:
		return 1 - studentTSF(-t, df)
	case math.IsInf(t, 1):
		return 0
	}
	// df/(df+t²) underflows for huge t; t²/df then dominates.
	x := df / (df + t*t)
	return 0.5 * mathext.RegIncBeta(df/2, 0.5, x)
}

// studentTTwoSided is the two-sided p-value 2·P(T > |t|), at most 1.
func studentTTwoSided(t, df float64) float64 { return math.Min(1, 2*studentTSF(math.Abs(t), df)) }

// chiSquaredSF is the upper tail P(X > x) of the chi-square distribution
// with k degrees of freedom, as scipy.stats.chi2.sf: the regularized upper
// incomplete gamma function Q(k/2, x/2), not 1 − CDF.
func chiSquaredSF(x, k float64) float64 {
	if !(x > 0) {
		return 1
	}
	return mathext.GammaIncRegComp(k/2, x/2)
}
