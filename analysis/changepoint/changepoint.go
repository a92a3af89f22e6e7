// Package changepoint finds the steps in a series of measurements taken one
// after the other (one value per commit or build): E-divisive means
// (Matteson & James 2014, "A nonparametric approach for multiple change
// point analysis of multivariate data", JASA 109(505)) proposes where a
// segment splits, and a two-sample test on the two segments decides
// whether the split is real, as Hunter does with a t-test in place of the
// original permutation test (Fleming et al. 2023, "Hunter: Using Change
// Point Detection to Hunt for Performance Regressions", ICPE; Daly et al.
// 2020, "The Use of Change Point Detection to Identify Software
// Performance Regressions in a Continuous Integration System", ICPE).
// Benchmark histories are not independent draws, so the test here is
// the generalised-least-squares step test under AR(1) noise, the noise's
// lag-1 autocorrelation estimated from the series (neighbouring builds
// are not independent), with isolated outliers replaced first (one
// far-off build does not hide a step beside it; ar.go), its p taken over
// all the splits searched, and a step that a straight line explains as
// well is a drift, not a step (stats.go).
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
	// DefaultAlpha is the level below which a step's p (Step.P: over
	// all the splits of its segment, the noise's autocorrelation
	// accounted for) makes it a step. A search tests many segments, and
	// its candidates are every split whose p is below 1, so the level is
	// below the usual 0.05: at 6e-4 the study found 0.07–0.73 false
	// steps per 100 step-free series at φ 0 to 0.7 (docs/history.md).
	// It was 1e-3 until the effect floor became robust (small): that
	// floor had dropped some wanders of autocorrelated noise beside an
	// outlier with the real steps, and at 1e-3 without it φ 0.7 gave
	// 0.87 and 1.17 false steps on the study's two seeds.
	DefaultAlpha = 6e-4
	// DefaultMinEffect is the smallest step reported, in standard
	// deviations of the noise around it (the pooled standard deviation
	// of its two segments): Cohen's d of 1. A significant split smaller
	// than that is most often a small step put at the wrong place or a
	// drift cut in two.
	DefaultMinEffect = 1.0
)

// Options are the detector's parameters; zero values take the defaults.
type Options struct {
	// MinSegment is the fewest points on each side of a step (≥ 2, as the
	// test needs two values per side). 0 means DefaultMinSegment.
	MinSegment int
	// Alpha is the level below which a split's p (Step.P) makes it a
	// step, in (0, 1). 0 means DefaultAlpha.
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
		return o, fmt.Errorf("minimum segment length must be at least 2 (the test needs two values a side), got %d", o.MinSegment)
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
	// Before and After are the 20% trimmed means of the segments on
	// either side (what the test compares: the mean of the middle 60% of
	// the values), each reaching to the neighbouring step (or the series'
	// end), so that one far-off build does not move them.
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	// DeltaPct is (After − Before) / |Before| in percent; undefined (NaN,
	// null in JSON) when Before is 0.
	DeltaPct analysis.Float `json:"delta_pct"`
	// P is the p of the step against its two segments: the
	// generalised-least-squares step test under the noise's lag-1
	// autocorrelation (glsZ), taken over all the places the split could
	// have been put in those segments (tester.p). It is not the p of the
	// whole search, which tests many segments.
	P float64 `json:"p"`
	// NBefore and NAfter are the segments' lengths.
	NBefore int `json:"n_before"`
	NAfter  int `json:"n_after"`
}

// Detect returns the steps of xs in index order.
//
//  1. Candidates: binary segmentation, each segment cut where the
//     E-divisive statistic is largest, at least MinSegment points from
//     either end, and both parts cut again, as long as the cut's p is
//     below 1 (propose).
//  2. Autocorrelation: the candidates are pruned at a liberal level
//     (rhoAlpha) with a first estimate from the series' differences
//     (diffRho), and the noise's lag-1 autocorrelation is estimated from
//     the residuals around the levels that leaves (residualRho).
//  3. Prune: each candidate is tested against its neighbouring segments
//     only (tester.p: the generalised-least-squares step test under
//     AR(1) noise, its p over the splits of those segments), and the
//     one that fails is dropped until none does: p not below Alpha, a
//     straight line through its two segments fitting as well (a drift),
//     or a step smaller than MinEffect (prune). The liberal prune keeps
//     segments that a wander of the noise made, which lowers the
//     estimate; when the residuals around the steps this prune keeps
//     give a higher one, the prune is done again with it.
//  4. The survivors are located again between their neighbours
//     (tester.relocate) and pruned once more, so that a step's Before,
//     After and P describe the segments it actually separates.
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
	t := tester{xs: xs, minSeg: opt.MinSegment, rho: diffRho(xs)}
	cand := t.propose(newDistances(xs))
	t.rho = residualRho(xs, t.prune(slices.Clone(cand), max(opt.Alpha, rhoAlpha), opt.MinEffect))
	t.estimated = true
	cps := t.prune(slices.Clone(cand), opt.Alpha, opt.MinEffect)
	if rho := residualRho(xs, cps); rho > t.rho {
		t.rho = rho
		cps = t.prune(cand, opt.Alpha, opt.MinEffect)
	}
	t.relocate(cps)
	cps = t.prune(cps, opt.Alpha, opt.MinEffect)
	steps := make([]Step, len(cps))
	for k, c := range cps {
		lo, hi := bounds(cps, k, len(xs))
		steps[k] = newStep(xs[lo:c], xs[c:hi], c, t.p(lo, c, hi))
	}
	return steps, nil
}

// rhoAlpha is the level of the prune whose segments the autocorrelation
// is estimated around (residualRho): a liberal one, as a step left out
// would be counted as autocorrelation, and a higher estimate would in
// turn hide more steps. On 300 series of 200 points of each family of
// the study the estimate around this prune's segments was within 0.03 of
// φ on average at φ 0 to 0.7 (0.67 to 0.71 at 0.7), with a standard
// deviation of 0.04 to 0.09.
const rhoAlpha = 0.05

// propose is binary segmentation: the best split of each segment, then
// of both its parts, until they are too short to split or their best
// split's p is 1 (no difference at all). Proposing every split rather
// than those below Alpha lets the prune find a short bump: a step up and
// back down inside one segment, which a single split of that segment
// tests poorly (in the study at φ 0, with the unequal-variance test of
// the time, the recall of 4σ steps rose from 0.90 to 0.96).
func (t tester) propose(d distances) []int {
	var cps []int
	var split func(lo, hi int)
	split = func(lo, hi int) {
		tau, ok := d.bestSplit(lo, hi, t.minSeg)
		if !ok || t.p(lo, tau, hi) >= 1 {
			return
		}
		cps = append(cps, tau)
		split(lo, tau)
		split(tau, hi)
	}
	split(0, len(t.xs))
	sort.Ints(cps)
	return cps
}

// tester decides whether a split is a step.
type tester struct {
	xs     []float64
	minSeg int
	rho    float64 // the noise's lag-1 autocorrelation, in [0, maxRho]
	// estimated is set once rho comes from the residuals (residualRho),
	// whose sampling error the test then accounts for (rhoDF) when the
	// estimate is above 0: at 0 (clipped there) the residuals showed no
	// autocorrelation, and the test is the plain t on its own degrees of
	// freedom, as a history of a dozen builds, whose ρ̂ would otherwise
	// leave the t four degrees of freedom, needs.
	estimated bool
}

// locWindow is how far from a proposed split the test looks for the
// split of largest |z|. The step test's jump term is one build wide, so
// a split one or two builds off loses most of it; the p is taken over
// all the segment's splits (maxSplitP) and stays valid for any of them.
const locWindow = 2

// p is the p of the split of xs[lo:hi] at tau: the generalised-least-
// squares t of the step under AR(1) noise (glsZ) at the split within
// locWindow of tau where it is largest, on degrees of freedom that
// account for the estimated autocorrelation (rhoDF), turned into the
// normal z of the same tail (tToZ), as the largest of the segment's
// splits (maxSplitP). Where that fit leaves no residual, the trimmed t
// (trimmedT) with its variance widened for the autocorrelation
// (arInflation) stands in. Two constant sides have p = 1 when equal,
// else 0.
func (t tester) p(lo, tau, hi int) float64 {
	tt, df, ok := trimmedT(t.xs, lo, tau, hi)
	if !ok {
		if mean(t.xs[lo:tau]) == mean(t.xs[tau:hi]) {
			return 1
		}
		return 0
	}
	m := min(t.minSeg, tau-lo, hi-tau)
	var z float64
	gt, gdf, ok := glsMaxT(t.xs, lo, tau, max(lo+m, tau-locWindow), min(hi-m, tau+locWindow), hi, t.rho)
	switch {
	case ok && t.estimated && t.rho > 0:
		z = tToZ(gt, rhoDF(gdf, t.rho, len(t.xs)))
	case ok:
		z = tToZ(gt, gdf)
	default:
		z = tToZ(tt/math.Sqrt(arInflation(tau-lo, hi-tau, t.rho)), df)
	}
	return maxSplitP(z, hi-lo, m)
}

// relocate moves each step to the likeliest split of the two segments
// around it under AR(1) noise (glsSplit): the first search cut segments
// that could hold several steps, this one sees a single step between its
// neighbours, and locates it by the transformed series' jump. At ρ 0.7
// a 3σ step alone in the middle of 200 builds with slow outliers was
// located within ±2 in 94% of series (2σ: 71%), against 89% (65%) by
// E-divisive's split; at ρ 0 both located 99% (91%).
func (t tester) relocate(cps []int) {
	for k := range cps {
		lo, hi := bounds(cps, k, len(t.xs))
		if tau, ok := glsSplit(t.xs, lo, cps[k], hi, t.minSeg, t.rho); ok {
			cps[k] = tau
		}
	}
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

// small tells whether the step between a and b is smaller than
// minEffect standard deviations of the noise around it (never when
// minEffect ≤ 0), by two robust measures, either of which makes it small:
//
//   - the difference of the segments' 20% trimmed means against their
//     pooled 20% winsorised standard deviation, scaled to estimate a
//     normal σ (trimmedEffect);
//   - the difference of their medians against their pooled robust
//     standard deviation (1.4826 × the median absolute deviation, the
//     constant that makes it estimate a normal σ: Rousseeuw & Croux 1993,
//     as scipy.stats.median_abs_deviation(scale="normal")).
//
// A spike moves neither. Until 2026-11-29 the first measure was the
// means against the sample standard deviations, which one slow build
// inflates: 2σ steps that passed the test were dropped as small (at φ 0
// the study found 0.70 of them, 0.87 with the trimmed measure). A step
// between two constant segments is never small.
func small(a, b []float64, minEffect float64) bool {
	if minEffect <= 0 {
		return false
	}
	ma, mb := median(a), median(b)
	return trimmedEffect(a, b) < minEffect || effect(a, b, ma, mb, madSigma(a, ma), madSigma(b, mb)) < minEffect
}

// winsorizedNormalVar is the variance of a standard normal winsorised at
// 20% a side: (1 − 2γ) − 2c·φ(c) + 2γc² with γ = 0.2 and c = Φ⁻¹(0.8)
// (through scipy.stats.norm in testdata/gen_reference.py).
const winsorizedNormalVar = 0.41208672670619423

// trimmedEffect is effect with the segments' 20% trimmed means
// (Tukey & McLaughlin 1963) and standard deviations from their 20%
// winsorised variances over winsorizedNormalVar, so that both estimate
// the normal's for normal noise and one far-off build moves neither;
// checked against scipy.stats.trim_mean and scipy.stats.mstats.winsorize
// in reference_test.go.
func trimmedEffect(a, b []float64) float64 {
	sd := func(xs []float64) (tm, s float64) {
		tm, _, _, ssw := trimmed(xs)
		return tm, math.Sqrt(ssw / float64(len(xs)-1) / winsorizedNormalVar)
	}
	ta, sa := sd(a)
	tb, sb := sd(b)
	return effect(a, b, ta, tb, sa, sb)
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

// prune drops, one at a time, the step that fails against its
// neighbouring segments, until none does: a step fails when its p is not
// below alpha, when a line through its two segments fits them as well
// (trendExplains, a drift) or when it is smaller than minEffect (small).
// Those failing the test go first, largest p first, as dropping them
// merges segments and gives the others more builds; then drifts, then
// small steps. Every survivor has then passed all three against the
// neighbours it ends with.
func (t tester) prune(cps []int, alpha, minEffect float64) []int {
	for len(cps) > 0 {
		worst, worstScore := -1, 0.0
		for k, c := range cps {
			lo, hi := bounds(cps, k, len(t.xs))
			p := t.p(lo, c, hi)
			score := 0.0 // passes
			switch {
			case p >= alpha:
				score = 3 + p
			case trendExplains(t.xs, lo, c, hi):
				score = 2 + p
			case small(t.xs[lo:c], t.xs[c:hi], minEffect):
				score = 1 + p
			}
			if score > worstScore {
				worst, worstScore = k, score
			}
		}
		if worst < 0 {
			return cps
		}
		cps = append(cps[:worst], cps[worst+1:]...)
	}
	return cps
}

func newStep(a, b []float64, at int, p float64) Step {
	ma, _, _, _ := trimmed(a)
	mb, _, _, _ := trimmed(b)
	dp := analysis.Float(math.NaN())
	if ma != 0 {
		dp = analysis.Float((mb - ma) / math.Abs(ma) * 100)
	}
	return Step{Index: at, Before: ma, After: mb, DeltaPct: dp, P: p, NBefore: len(a), NAfter: len(b)}
}

func mean(xs []float64) float64 { return stat.Mean(xs, nil) }

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

// variance is the sample variance of xs (n − 1 in the denominator; 0
// for one value, where gonum's is NaN).
func variance(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	return stat.Variance(xs, nil)
}
