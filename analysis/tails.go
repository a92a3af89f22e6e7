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
// freedom for any t, as scipy.stats.t.sf: studentTTail for t > 0, taken
// directly rather than as 1 − CDF so tiny tails keep their relative
// accuracy, and by symmetry below 0.
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
	return studentTTail(t, df)
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
