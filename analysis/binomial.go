package analysis

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Proportion is an observed rate k/n with its exact (Clopper–Pearson)
// confidence interval.
type Proportion struct {
	K      int   `json:"k"`
	N      int   `json:"n"`
	Rate   Float `json:"rate"`
	CILow  Float `json:"ci_low"`
	CIHigh Float `json:"ci_high"`
}

// Excludes reports whether p lies outside the interval.
func (p Proportion) Excludes(x float64) bool {
	return p.CILow.Defined() && p.CIHigh.Defined() && (x < float64(p.CILow) || x > float64(p.CIHigh))
}

// BinomialCI returns k/n with the Clopper–Pearson interval at the given
// confidence: the quantiles of Beta(k, n−k+1) and Beta(k+1, n−k), 0 and 1
// at the edges. It never undercovers, which is what a check of a test's
// false-positive rate needs. With n = 0 everything is undefined.
func BinomialCI(k, n int, confidence float64) (Proportion, []string) {
	p := Proportion{K: k, N: n, Rate: undefined(), CILow: undefined(), CIHigh: undefined()}
	if n <= 0 {
		return p, []string{"a rate needs at least one experiment"}
	}
	if k < 0 || k > n {
		return p, []string{fmt.Sprintf("%d successes out of %d is not a rate", k, n)}
	}
	if !(confidence > 0 && confidence < 1) {
		return p, []string{fmt.Sprintf("confidence %v is not between 0 and 1", confidence)}
	}
	a := 1 - confidence
	p.Rate = defined(float64(k) / float64(n))
	p.CILow, p.CIHigh = 0, 1
	if k > 0 {
		p.CILow = defined(distuv.Beta{Alpha: float64(k), Beta: float64(n - k + 1)}.Quantile(a / 2))
	}
	if k < n {
		p.CIHigh = defined(distuv.Beta{Alpha: float64(k + 1), Beta: float64(n - k)}.Quantile(1 - a/2))
	}
	return p, nil
}

// BinomialRange returns the central interval [lo, hi] of the number of
// successes in n trials of probability p holding at least the given
// probability mass (scipy.stats.binom.interval): lo is the smallest k with
// P(X ≤ k) ≥ (1−confidence)/2 and hi the smallest k with
// P(X ≤ k) ≥ 1 − (1−confidence)/2.
func BinomialRange(n int, p, confidence float64) (lo, hi int) {
	if n <= 0 {
		return 0, 0
	}
	a := (1 - confidence) / 2
	lo, hi = -1, n
	cdf := 0.0
	for k := 0; k <= n; k++ {
		cdf += binomPMF(n, k, p)
		if lo < 0 && cdf >= a*(1-1e-12) {
			lo = k
		}
		if cdf >= (1-a)*(1-1e-12) {
			hi = k
			break
		}
	}
	if lo < 0 {
		lo = 0
	}
	return lo, hi
}

// binomPMF is P(X = k) for X ~ Binomial(n, p), through logarithms so large
// n does not overflow.
func binomPMF(n, k int, p float64) float64 {
	switch {
	case p <= 0:
		if k == 0 {
			return 1
		}
		return 0
	case p >= 1:
		if k == n {
			return 1
		}
		return 0
	}
	ln, _ := math.Lgamma(float64(n + 1))
	lk, _ := math.Lgamma(float64(k + 1))
	lnk, _ := math.Lgamma(float64(n - k + 1))
	return math.Exp(ln - lk - lnk + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
}

// Interval is a confidence interval of a location with its point estimate
// and the coverage actually achieved.
type Interval struct {
	Point    Float `json:"point"`
	Low      Float `json:"low"`
	High     Float `json:"high"`
	Coverage Float `json:"coverage"` // exact coverage of [Low, High], ≥ the level asked for
}

// MedianCI returns the sample median and the distribution-free confidence
// interval of the population median from order statistics: [x(r), x(n−r+1)]
// with the largest r for which 1 − 2·P(B ≤ r−1) ≥ confidence, B ~
// Binomial(n, ½) (OrderSage's non-parametric median interval). Samples too
// small for the level (n < 6 at 95%) give an undefined interval.
func MedianCI(xs []float64, confidence float64) (Interval, []string) {
	iv := Interval{Point: undefined(), Low: undefined(), High: undefined(), Coverage: undefined()}
	n := len(xs)
	if n == 0 {
		return iv, []string{"median interval of an empty sample"}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	iv.Point = defined((s[(n-1)/2] + s[n/2]) / 2)
	r, tail := 0, 0.0 // tail = P(B ≤ r−1) for the r found
	cdf := 0.0
	for j := 1; j <= (n+1)/2; j++ {
		cdf += binomPMF(n, j-1, 0.5) // P(B ≤ j−1)
		if 1-2*cdf < confidence*(1-1e-12) {
			break
		}
		r, tail = j, cdf
	}
	if r == 0 {
		return iv, []string{fmt.Sprintf("median interval at %.0f%% needs more than %d values", confidence*100, n)}
	}
	iv.Low = defined(s[r-1])
	iv.High = defined(s[n-r])
	iv.Coverage = defined(1 - 2*tail)
	return iv, nil
}
