package analysis

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// binomialSF is P(X ≥ k) for X ~ Binomial(n, p) (scipy.stats.binom.sf(k−1, n, p)).
func binomialSF(k, n int, p float64) float64 {
	if k <= 0 {
		return 1
	}
	if k > n {
		return 0
	}
	return distuv.Binomial{N: float64(n), P: p}.Survival(float64(k - 1))
}

// AlphaPower is how well k A/A experiments judged with Clopper–Pearson
// intervals at the given confidence can judge a test's false-positive
// rate against alpha (the power of the exact binomial test; Chernick and
// Liu, "The saw-toothed behavior of power versus sample size and software
// solutions: single binomial proportion using exact methods", The American
// Statistician 56(2), 2002):
//
//   - Inflated: the probability that the interval lies above alpha when
//     the true rate is 2·alpha. The interval of x of k lies above alpha
//     exactly when P(Bin(k, alpha) ≥ x) < (1−confidence)/2, so it is
//     P(Bin(k, 2·alpha) ≥ x*) for the smallest such x*.
//   - Conservative: whether a test that never rejects (rate 0) can be told
//     at all: the interval of 0 of k lies below alpha, i.e.
//     (1−alpha)^k < (1−confidence)/2.
func AlphaPower(k int, alpha, confidence float64) (inflated float64, conservative bool) {
	if k <= 0 || !(alpha > 0 && alpha < 0.5) || !(confidence > 0 && confidence < 1) {
		return 0, false
	}
	tail := (1 - confidence) / 2
	// Smallest x with P(Bin(k, alpha) ≥ x) < tail, by bisection on the
	// decreasing survival function.
	lo, hi := 0, k+1 // sf(lo) ≥ tail (sf(0) = 1), sf(hi) = 0 < tail
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if binomialSF(mid, k, alpha) < tail {
			hi = mid
		} else {
			lo = mid
		}
	}
	inflated = binomialSF(hi, k, 2*alpha)
	conservative = math.Pow(1-alpha, float64(k)) < tail
	return inflated, conservative
}

// ExperimentsToJudgeAlpha is the number of A/A experiments from which on
// AlphaPower reaches PowerTarget against a rate of 2·alpha and a test that
// never rejects can be told: the smallest K such that every K' ≥ K has
// that power (the exact test's power is saw-toothed in K, so the first K
// reaching it is not enough; Chernick and Liu 2002). With only the
// inflated rate to detect (an anytime-valid test, conservative by design)
// pass inflatedOnly. It returns 0 for invalid arguments.
func ExperimentsToJudgeAlpha(alpha, confidence float64, inflatedOnly bool) int {
	if !(alpha > 0 && alpha < 0.5) || !(confidence > 0 && confidence < 1) {
		return 0
	}
	// The normal approximation of the one-sided test of alpha against
	// 2·alpha bounds the search: the saw-tooth stays within a few percent
	// of it.
	za := distuv.UnitNormal.Quantile(1 - (1-confidence)/2)
	zb := distuv.UnitNormal.Quantile(PowerTarget)
	approx := math.Pow((za*math.Sqrt(alpha*(1-alpha))+zb*math.Sqrt(2*alpha*(1-2*alpha)))/alpha, 2)
	limit := int(2*approx) + 100
	need := 1
	for k := 1; k <= limit; k++ {
		inf, cons := AlphaPower(k, alpha, confidence)
		if inf < PowerTarget || (!inflatedOnly && !cons) {
			need = k + 1
		}
	}
	return need
}
