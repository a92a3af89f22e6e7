// Package changepoint finds the steps in a series of measurements taken one
// after the other (one value per commit or build): E-divisive means
// (Matteson & James 2014, "A nonparametric approach for multiple change
// point analysis of multivariate data", JASA 109(505)) proposes where a
// segment splits, and a two-sample t-test (Welch's) on the two segments
// decides whether the split is real, as Hunter does in place of the
// original permutation test (Fleming et al. 2023, "Hunter: Using Change
// Point Detection to Hunt for Performance Regressions", ICPE; Daly et al.
// 2020, "The Use of Change Point Detection to Identify Software
// Performance Regressions in a Continuous Integration System", ICPE).
//
// The package is pure computation: no I/O, no global state.
package changepoint

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/stat"

	"github.com/perflab/perflab/analysis"
)

// Defaults of Options, chosen by the study in bench/changepoint_study (see
// docs/history.md for its figures).
const (
	// DefaultMinSegment is the fewest points a segment may have: a single
	// spike, or a run of fewer than this many, is never a step of its own.
	// 6 rather than 5: with 5, a high run of noise at a series' start,
	// next to a spike, was taken for a step in one of 3,000 spike series
	// of the study; with 6, in none.
	DefaultMinSegment = 6
	// DefaultAlpha is the significance level of each split's t-test. It
	// is far below the usual 0.05 because the split tested is the one
	// that looked most different among all the places a segment could be
	// cut, which makes a nominal p optimistic: at 1e-3 the study found 3.5
	// false steps per 100 step-free series without the effect floor
	// (DefaultMinEffect), 0.7 at 1e-4; with the floor, 0.7–0.9 at 2.5e-3.
	DefaultAlpha = 2.5e-3
	// DefaultMinEffect is the smallest step reported, in standard
	// deviations of the noise around it (the pooled standard deviation
	// of its two segments): Cohen's d of 1. A significant split smaller
	// than that is most often a small step put at the wrong place or a
	// drift cut in two; leaving it out let the study's alpha rise from
	// 1e-4 to 2.5e-3, finding more of the large steps (docs/history.md).
	DefaultMinEffect = 1.0
)

// Options are the detector's parameters; zero values take the defaults.
type Options struct {
	// MinSegment is the fewest points on each side of a step (≥ 2, as the
	// t-test needs two values per side). 0 means DefaultMinSegment.
	MinSegment int
	// Alpha is the level below which a split's two-sided Welch p makes it
	// a step, in (0, 1). 0 means DefaultAlpha.
	Alpha float64
	// MinEffect is the smallest |After − Before| reported, in pooled
	// standard deviations of the two segments. 0 means DefaultMinEffect;
	// a negative value reports steps of any size.
	MinEffect float64
}

// withDefaults fills the zero fields and checks the rest.
func (o Options) withDefaults() (Options, error) {
	if o.MinSegment == 0 {
		o.MinSegment = DefaultMinSegment
	}
	if o.Alpha == 0 {
		o.Alpha = DefaultAlpha
	}
	if o.MinEffect == 0 {
		o.MinEffect = DefaultMinEffect
	}
	if o.MinSegment < 2 {
		return o, fmt.Errorf("minimum segment length must be at least 2 (the t-test needs two values a side), got %d", o.MinSegment)
	}
	if !(o.Alpha > 0 && o.Alpha < 1) {
		return o, fmt.Errorf("alpha must be between 0 and 1, got %g", o.Alpha)
	}
	return o, nil
}

// Step is one change point: the series' level moves at Index.
type Step struct {
	// Index is the first point of the new level (0-based).
	Index int `json:"index"`
	// Before and After are the means of the segments on either side, each
	// reaching to the neighbouring step (or the series' end).
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	// DeltaPct is (After − Before) / |Before| in percent; undefined (NaN,
	// null in JSON) when Before is 0.
	DeltaPct analysis.Float `json:"delta_pct"`
	// P is the two-sided Welch t-test p of the two segments.
	P float64 `json:"p"`
	// NBefore and NAfter are the segments' lengths.
	NBefore int `json:"n_before"`
	NAfter  int `json:"n_after"`
}

// Detect returns the steps of xs in index order. Each candidate split is
// the one maximising the E-divisive statistic within its segment, at least
// MinSegment points from either end; it is kept when Welch's t-test
// between the two parts gives p < Alpha, and the parts are then split
// again (binary segmentation). Then each step is tested again against its
// neighbouring segments only, and the weakest one whose p is no longer
// below Alpha is dropped until all pass; the survivors are located again
// between their neighbours and tested once more; last, a step smaller
// than MinEffect pooled standard deviations of its two segments is left
// out (an effect-size floor, Cohen's d), so that a step's Before, After
// and P describe the segments it actually separates.
func Detect(xs []float64, opt Options) ([]Step, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	for i, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("value %d is %v: a series must be finite numbers", i, x)
		}
	}
	d := newDistances(xs)
	var cps []int
	var split func(lo, hi int)
	split = func(lo, hi int) {
		tau, ok := d.bestSplit(lo, hi, opt.MinSegment)
		if !ok || welchP(xs[lo:tau], xs[tau:hi]) >= opt.Alpha {
			return
		}
		cps = append(cps, tau)
		split(lo, tau)
		split(tau, hi)
	}
	split(0, len(xs))
	sort.Ints(cps)
	cps = prune(xs, cps, opt.Alpha)
	relocate(d, cps, opt.MinSegment)
	cps = prune(xs, cps, opt.Alpha)
	cps = large(xs, cps, opt.MinEffect)
	steps := make([]Step, len(cps))
	for k, c := range cps {
		lo, hi := bounds(cps, k, len(xs))
		steps[k] = newStep(xs[lo:c], xs[c:hi], c)
	}
	return steps, nil
}

// bounds returns the start of the segment before step k and the end of the
// segment after it.
func bounds(cps []int, k, n int) (lo, hi int) {
	lo, hi = 0, n
	if k > 0 {
		lo = cps[k-1]
	}
	if k+1 < len(cps) {
		hi = cps[k+1]
	}
	return lo, hi
}

// large keeps the steps of at least minEffect standard deviations of the
// noise around them (all of them when minEffect ≤ 0): the difference of
// the two segments' medians against their pooled robust standard
// deviation (1.4826 × the median absolute deviation, the constant that
// makes it estimate a normal σ: Rousseeuw & Croux 1993, as
// scipy.stats.median_abs_deviation(scale="normal")), so that a spike,
// which moves a short segment's mean and its standard deviation, moves
// neither; a step between two constant segments is always kept.
func large(xs []float64, cps []int, minEffect float64) []int {
	if minEffect <= 0 {
		return cps
	}
	var keep []int
	for k, c := range cps {
		lo, hi := bounds(cps, k, len(xs))
		a, b := xs[lo:c], xs[c:hi]
		ma, mb := median(a), median(b)
		if effect(a, b, mean(a), mean(b), math.Sqrt(variance(a)), math.Sqrt(variance(b))) >= minEffect &&
			effect(a, b, ma, mb, madSigma(a, ma), madSigma(b, mb)) >= minEffect {
			keep = append(keep, c)
		}
	}
	return keep
}

// effect is |cb − ca| in pooled standard deviations of a and b (sa and
// sb each's): Cohen's d (J. Cohen, Statistical Power Analysis for the
// Behavioral Sciences, 2nd ed., 1988, §2.2) with means and sample
// standard deviations, checked against numpy in reference_test.go; +Inf
// when both are constant.
func effect(a, b []float64, ca, cb, sa, sb float64) float64 {
	sd := math.Sqrt((sa*sa*float64(len(a)-1) + sb*sb*float64(len(b)-1)) / float64(len(a)+len(b)-2))
	if sd == 0 {
		return math.Inf(1)
	}
	return math.Abs(cb-ca) / sd
}

// median is the median of xs (not changed).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// madSigma is the normal-consistent median absolute deviation of xs
// about its median m: 1.4826 · median|x − m| (Rousseeuw & Croux 1993;
// scipy.stats.median_abs_deviation(xs, scale="normal")).
func madSigma(xs []float64, m float64) float64 { return 1.4826 * median(absDev(xs, m)) }

// absDev is |x − m| for each x of xs.
func absDev(xs []float64, m float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Abs(x - m)
	}
	return out
}

// prune drops, one at a time, the step with the largest p against its
// neighbouring segments while that p is not below alpha.
func prune(xs []float64, cps []int, alpha float64) []int {
	for len(cps) > 0 {
		worst, worstP := -1, alpha
		for k, c := range cps {
			lo, hi := bounds(cps, k, len(xs))
			if p := welchP(xs[lo:c], xs[c:hi]); p >= worstP {
				worst, worstP = k, p
			}
		}
		if worst < 0 {
			return cps
		}
		cps = append(cps[:worst], cps[worst+1:]...)
	}
	return cps
}

func newStep(a, b []float64, at int) Step {
	ma, mb := mean(a), mean(b)
	dp := analysis.Float(math.NaN())
	if ma != 0 {
		dp = analysis.Float((mb - ma) / math.Abs(ma) * 100)
	}
	return Step{Index: at, Before: ma, After: mb, DeltaPct: dp, P: welchP(a, b), NBefore: len(a), NAfter: len(b)}
}

func mean(xs []float64) float64 { return stat.Mean(xs, nil) }

// welchP is the two-sided p of Welch's t-test of a against b. When both
// parts are constant the test is undefined; equal constants are then no
// step (p = 1) and different ones a certain step (p = 0).
func welchP(a, b []float64) float64 {
	w, _ := analysis.WelchTest(a, b, 0.95)
	if w.P.Defined() {
		return float64(w.P)
	}
	if mean(a) == mean(b) {
		return 1
	}
	return 0
}

// maxMatrix is the longest series whose pairwise distance sums are kept
// (n² floats, 32 MiB at 2048); longer series compute them when needed.
const maxMatrix = 2048

// distances are the E-divisive distances |x_i − x_j|^α with α = ½.
// Matteson & James allow any α in (0, 2) and default to 1; on the study's
// series, which have slow outliers, ½ located steps better than 1, 1.5
// and 1.9 (300 series per family, alpha 1e-4: recall of steps ≥ 2σ
// within ±1 point 0.90 against 0.89, 0.87, 0.85, at equal false steps). cum[i·(n+1)+j] is Σ_{k<j} |x_i − x_k|^α, so
// that a row sum costs O(1); for series longer than maxMatrix it is nil.
type distances struct {
	xs  []float64
	cum []float64
}

func distance(a, b float64) float64 { return math.Sqrt(math.Abs(a - b)) }

func newDistances(xs []float64) distances {
	d := distances{xs: xs}
	n := len(xs)
	if n > maxMatrix {
		return d
	}
	d.cum = make([]float64, n*(n+1))
	for i, xi := range xs {
		row := d.cum[i*(n+1) : (i+1)*(n+1)]
		for j, xj := range xs {
			row[j+1] = row[j] + distance(xi, xj)
		}
	}
	return d
}

// row returns Σ_{from ≤ j < to} |x_i − x_j|^α.
func (d distances) row(i, from, to int) float64 {
	if d.cum != nil {
		n1 := len(d.xs) + 1
		return d.cum[i*n1+to] - d.cum[i*n1+from]
	}
	s, xi := 0.0, d.xs[i]
	for _, x := range d.xs[from:to] {
		s += distance(xi, x)
	}
	return s
}

// bestSplit returns the τ in [lo+minSeg, hi−minSeg] maximising
// Matteson & James's scaled sample divergence of X = x[lo:τ] (m points)
// and Y = x[τ:hi] (k points):
//
//	Q(τ) = m·k/(m+k) · (2/(m·k)·Σ|X−Y|^α − Σ_{i<j}|X_i−X_j|^α/C(m,2) − Σ_{i<j}|Y_i−Y_j|^α/C(k,2))
//
// with the far end of Y fixed at hi, as Hunter does. (Searching the far
// end as well, as Matteson & James do, found short bumps but raised the
// study's false steps tenfold, each short Y being one more test.) The sums
// are updated as τ moves one point from Y to X, so a segment of n points
// costs O(n) with the distance matrix, O(n²) without. ok is false when
// the segment is too short to split.
func (d distances) bestSplit(lo, hi, minSeg int) (tau int, ok bool) {
	if hi-lo < 2*minSeg {
		return 0, false
	}
	var wx, wy, b float64 // within X, within Y, between
	first := lo + minSeg
	for i := lo; i < first; i++ {
		wx += d.row(i, i+1, first)
		b += d.row(i, first, hi)
	}
	for j := first; j < hi; j++ {
		wy += d.row(j, j+1, hi)
	}
	best := math.Inf(-1)
	for t := first; t <= hi-minSeg; t++ {
		if t > first {
			p := t - 1 // moves from Y to X
			toX, toY := d.row(p, lo, p), d.row(p, t, hi)
			wx += toX
			wy -= toY
			b += toY - toX
		}
		m, k := float64(t-lo), float64(hi-t)
		q := m * k / (m + k) * (2*b/(m*k) - wx/(m*(m-1)/2) - wy/(k*(k-1)/2))
		if q > best {
			best, tau = q, t
		}
	}
	return tau, true
}

// relocate moves each step to the best split of the two segments around
// it: the first search cut segments that could hold several steps, this
// one sees a single step between its neighbours, and locates it better.
func relocate(d distances, cps []int, minSeg int) {
	for k := range cps {
		lo, hi := bounds(cps, k, len(d.xs))
		if t, ok := d.bestSplit(lo, hi, minSeg); ok {
			cps[k] = t
		}
	}
}

// variance is the sample variance of xs (n − 1 in the denominator; 0
// for one value, where gonum's is NaN).
func variance(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	return stat.Variance(xs, nil)
}
