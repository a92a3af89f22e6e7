package analysis

import (
	"fmt"
	"math"
)

// Welch is the result of Welch's unequal-variances t-test.
type Welch struct {
	T      Float `json:"t"`       // (mean A − mean B) / SE
	DF     Float `json:"df"`      // Welch–Satterthwaite degrees of freedom
	P      Float `json:"p"`       // two-sided
	CILow  Float `json:"ci_low"`  // confidence interval of mean(B) − mean(A)
	CIHigh Float `json:"ci_high"` //
}

// MannWhitney is the result of the Mann–Whitney U (Wilcoxon rank-sum) test.
type MannWhitney struct {
	U           Float `json:"u"`            // U of sample A: rank sum of A − nA(nA+1)/2
	P           Float `json:"p"`            // exact when Exact, else PAsymptotic
	PAsymptotic Float `json:"p_asymptotic"` // normal approximation, tie and continuity corrected
	Exact       bool  `json:"exact"`
}

// KruskalWallis is the result of the Kruskal–Wallis H test.
type KruskalWallis struct {
	H Float `json:"h"` // tie-corrected
	P Float `json:"p"` // chi-square with k−1 degrees of freedom
}

// Correlation is a correlation coefficient and its two-sided p-value.
type Correlation struct {
	Rho Float `json:"rho"`
	P   Float `json:"p"`
}

// maxExactN is the largest size of the smaller sample for which the
// Mann–Whitney p-value is exact (without ties), as scipy.stats.mannwhitneyu's
// method "auto": exact when either sample has at most 8 values.
const maxExactN = 8

// maxExactCells bounds m·n for the exact Mann–Whitney p-value: the lower
// tail needs up to m·n/2 coefficients. Beyond it (a handful of values
// against more than half a million) the normal approximation is used, as
// SciPy's exact recursion would take minutes there.
const maxExactCells = 1 << 22

// WelchTest runs Welch's t-test of a against b. The confidence interval is
// of mean(b) − mean(a) at the given confidence level. It needs at least two
// values per sample and some variance.
func WelchTest(a, b []float64, confidence float64) (Welch, []string) {
	w := Welch{T: undefined(), DF: undefined(), P: undefined(), CILow: undefined(), CIHigh: undefined()}
	if len(a) < 2 || len(b) < 2 {
		return w, []string{"Welch t-test needs at least 2 values per sample"}
	}
	return welchFrom(welchMoments(a, b), confidence)
}

// welchFrom is WelchTest from the moments of samples of at least 2 values.
func welchFrom(p welchParts, confidence float64) (Welch, []string) {
	w := Welch{T: undefined(), DF: undefined(), P: undefined(), CILow: undefined(), CIHigh: undefined()}
	if p.se2 == 0 {
		return w, []string{"Welch t-test undefined: both samples have zero variance"}
	}
	se := math.Sqrt(p.se2)
	t := (p.ma - p.mb) / se
	df := p.df
	ma, mb, scale := p.ma, p.mb, p.scale
	w.T = defined(t)
	w.DF = defined(df)
	w.P = defined(studentTTwoSided(t, df))
	q := studentTQuantile(1-(1-confidence)/2, df)
	d := mb - ma
	w.CILow = defined((d - q*se) * scale)
	w.CIHigh = defined((d + q*se) * scale)
	return w, nil
}

// welchParts holds the moments behind Welch's test, computed on values
// scaled by a power of two so variances cannot overflow; t, df and p are
// scale-free, locations are multiplied back by scale.
type welchParts struct {
	scale, ma, mb float64
	se2           float64 // squared standard error of mean(b) − mean(a)
	df            float64 // Welch–Satterthwaite
}

// welchMoments computes welchParts for samples of at least 2 values.
func welchMoments(a, b []float64) welchParts {
	p := welchParts{scale: scaleOf(a, b)}
	var sa, sb float64
	p.ma, sa = meanSDScaled(a, p.scale)
	p.mb, sb = meanSDScaled(b, p.scale)
	na, nb := float64(len(a)), float64(len(b))
	va, vb := sa*sa/na, sb*sb/nb
	p.se2 = va + vb
	p.df = p.se2 * p.se2 / (va*va/(na-1) + vb*vb/(nb-1))
	return p
}

func scaled(xs []float64, scale float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = x / scale
	}
	return out
}

// MannWhitneyU runs the two-sided Mann–Whitney U test of a against b. U is
// the statistic of sample a. As scipy.stats.mannwhitneyu with method
// "auto", the p-value is exact when either sample has at most 8 values and
// there are no ties (and m·n ≤ maxExactCells); otherwise it is the normal
// approximation with tie and continuity correction.
func MannWhitneyU(a, b []float64) (MannWhitney, []string) {
	m := MannWhitney{U: undefined(), P: undefined(), PAsymptotic: undefined()}
	if len(a) == 0 || len(b) == 0 {
		return m, []string{"Mann–Whitney test needs at least 1 value per sample"}
	}
	return mannWhitneyRanks(len(a), len(b), rankGroups(sortedCopy(a), sortedCopy(b)))
}

// mannWhitneyRanks is MannWhitneyU from the pooled ranks of non-empty
// samples of sizes la and lb.
func mannWhitneyRanks(la, lb int, r pooledRanks) (MannWhitney, []string) {
	m := MannWhitney{U: undefined(), P: undefined(), PAsymptotic: undefined()}
	na, nb := float64(la), float64(lb)
	ra := r.sums[0]
	u1 := ra - na*(na+1)/2
	u2 := na*nb - u1
	m.U = defined(u1)
	big := math.Max(u1, u2)
	n := na + nb
	sigma := math.Sqrt(na * nb / 12 * ((n + 1) - r.tieTerm/(n*(n-1))))
	var warn []string
	if sigma > 0 && !math.IsNaN(sigma) {
		z := (big - na*nb/2 - 0.5) / sigma
		m.PAsymptotic = defined(math.Min(1, 2*normalSF(z)))
	} else {
		warn = append(warn, "Mann–Whitney p undefined: all values are equal")
	}
	m.P = m.PAsymptotic
	if mwuExactFor(la, lb, r.ties) {
		m.Exact = true
		m.P = defined(math.Min(1, 2*mwuSurvival(la, lb, int(math.Round(big)))))
	}
	return m, warn
}

// mwuExactFor reports whether the Mann–Whitney p-value of samples of
// sizes m and n is exact: either has at most maxExactN values, there are no
// ties, and m·n is at most maxExactCells.
func mwuExactFor(m, n int, ties bool) bool {
	return (m <= maxExactN || n <= maxExactN) && !ties && m*n <= maxExactCells
}

// mwuLowerCounts returns, for samples of sizes m and n without ties, the
// number of rank arrangements giving each value 0..k of U. They are the
// first coefficients of the Gaussian binomial coefficient
// [m+n choose m]_q = ∏_{i=1}^{min(m,n)} (1 − q^{n'+i})/(1 − q^i), with n' the
// larger size, built one factor at a time (Harding 1984, "An efficient,
// minimal-storage procedure for calculating the Mann–Whitney U,
// generalized U and similar distributions", Applied Statistics 33: 1–6):
// O(min(m,n)·k) operations, and only additions while k < n'+1, as in the
// far tail.
func mwuLowerCounts(m, n, k int) []float64 {
	if m > n {
		m, n = n, m
	}
	k = min(k, m*n)
	c := make([]float64, k+1)
	c[0] = 1
	for i := 1; i <= m; i++ {
		for j := k; j >= n+i; j-- { // × (1 − q^{n+i})
			c[j] -= c[j-n-i]
		}
		for j := i; j <= k; j++ { // ÷ (1 − q^i)
			c[j] += c[j-i]
		}
	}
	return c
}

// binomial returns C(n, k) as a float64 (k small: a product of k ratios).
func binomial(n, k int) float64 {
	k = min(k, n-k)
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}

// mwuSurvival returns P(U ≥ u) under the null hypothesis for sizes m, n
// without ties: by symmetry P(U ≤ m·n − u), summed from the small end as
// SciPy's _MWU.sf does, so far-tail p-values keep their relative accuracy.
func mwuSurvival(m, n, u int) float64 {
	k := m*n - u
	if k < 0 {
		return 0
	}
	if k >= m*n {
		return 1
	}
	tail := 0.0
	for _, c := range mwuLowerCounts(m, n, k) {
		tail += c
	}
	return math.Min(1, tail/binomial(m+n, min(m, n)))
}

// mwuMinP returns the smallest two-sided p-value the test can produce for
// samples of sizes m and n when p is exact, 2/C(m+n, m), so callers can
// tell when no amount of difference could reach significance.
func mwuMinP(m, n int) float64 {
	return math.Min(1, 2/binomial(m+n, min(m, n)))
}

// KruskalWallisH runs the Kruskal–Wallis H test on two or more groups (as
// scipy.stats.kruskal). Empty groups are ignored.
func KruskalWallisH(groups ...[]float64) (KruskalWallis, []string) {
	var gs [][]float64
	for _, g := range groups {
		if len(g) > 0 {
			gs = append(gs, sortedCopy(g))
		}
	}
	return kruskalWallisSorted(gs)
}

// kruskalWallisSorted is KruskalWallisH of sorted, non-empty groups.
func kruskalWallisSorted(gs [][]float64) (KruskalWallis, []string) {
	if len(gs) < 2 {
		return KruskalWallis{H: undefined(), P: undefined()}, []string{"Kruskal–Wallis test needs at least 2 non-empty samples"}
	}
	sizes := make([]int, len(gs))
	for i, g := range gs {
		sizes[i] = len(g)
	}
	return kruskalWallisRanks(sizes, rankGroups(gs...))
}

// kruskalWallisRanks is the Kruskal–Wallis test of at least two non-empty
// groups of the given sizes from their pooled ranks.
func kruskalWallisRanks(sizes []int, r pooledRanks) (KruskalWallis, []string) {
	k := KruskalWallis{H: undefined(), P: undefined()}
	n := float64(r.n)
	sum := 0.0
	for i, size := range sizes {
		rs := r.sums[i]
		sum += rs * rs / float64(size)
	}
	h := 12/(n*(n+1))*sum - 3*(n+1)
	corr := 1 - r.tieTerm/(n*n*n-n)
	if corr <= 0 || n < 2 {
		return k, []string{"Kruskal–Wallis H undefined: all values are equal"}
	}
	h /= corr
	if h < 0 {
		h = 0 // rounding
	}
	k.H = defined(h)
	k.P = defined(chiSquaredSF(h, float64(len(sizes)-1)))
	return k, nil
}

// SpearmanTrend returns Spearman's rank correlation of xs against their
// position (0, 1, 2, ...) and its two-sided p-value from the t
// approximation with n−2 degrees of freedom (as scipy.stats.spearmanr). A
// small p means the values drift with trial order, so they are not
// independent and identically distributed.
func SpearmanTrend(xs []float64) (Correlation, []string) {
	_, ranks := sortedWithRanks(xs)
	return spearmanRanks(ranks)
}

// spearmanRanks is SpearmanTrend given the ranks of the values within
// their sample, in trial order.
func spearmanRanks(ranks []float64) (Correlation, []string) {
	c := Correlation{Rho: undefined(), P: undefined()}
	n := len(ranks)
	if n < 3 {
		return c, []string{fmt.Sprintf("trend needs at least 3 values, have %d", n)}
	}
	// Pearson correlation of ranks with 1..n.
	mr := float64(n+1) / 2
	sxy, sxx, syy := 0.0, 0.0, 0.0
	for i, x := range ranks {
		dx := x - mr
		dy := float64(i+1) - mr
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 {
		return c, []string{"trend undefined: all values are equal"}
	}
	// ρ in the order of operations of numpy.corrcoef, which
	// scipy.stats.spearmanr(values, positions) applies to the ranks: the
	// sums scaled by 1/(n−1) (numpy.cov), the cross term divided by the
	// positions' standard deviation, then by the values'. The sums are
	// exact (multiples of ¼ below 2⁵³), so ρ is scipy's to the bit; that
	// matters at |ρ| = 1, where t = ρ·√(df/((1+ρ)(1−ρ))) is infinite and
	// p = 0 when ρ computes to ±1 exactly, but corrcoef gives 1 − 2⁻⁵³ at
	// some n (5, 10, 24, 100, ...) and then t ≈ 10⁸ and a tiny p (1.4e-24
	// at n = 5; it underflows to 0 past n ≈ 40). Computed as sxy/√(sxx·syy),
	// ρ was exactly ±1 at every n and p 0 (testdata/gen_spearman_edge.py).
	f := 1 / float64(n-1)
	rho := sxy * f / math.Sqrt(syy*f) / math.Sqrt(sxx*f)
	rho = math.Max(-1, math.Min(1, rho))
	c.Rho = defined(rho)
	df := float64(n - 2)
	if math.Abs(rho) == 1 {
		c.P = 0 // t = ±∞ (scipy: stdtr(df, −∞) = 0)
		return c, nil
	}
	t := rho * math.Sqrt(df/((rho+1)*(1-rho)))
	c.P = defined(studentTTwoSided(t, df))
	return c, nil
}
