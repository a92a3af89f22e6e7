package analysis

import (
	"math"
	"slices"
)

// Correction methods for testing several metrics at once.
const (
	CorrectionHolm       = "holm"
	CorrectionBonferroni = "bonferroni"
	CorrectionNone       = "none"
	// CorrectionBH is Benjamini & Hochberg's step-up procedure (1995, "Controlling the
	// false discovery rate", J. R. Statist. Soc. B 57: 289–300; R's
	// p.adjust(method = "BH")): it controls the expected share of false
	// discoveries among the changes it reports, not the chance of any,
	// for long lists such as a profile's functions.
	CorrectionBH = "bh"
	// CorrectionWeightedBH is Benjamini–Hochberg with p-value weights
	// (Genovese, Roeder & Wasserman 2006, "False discovery control with
	// p-value weighting", Biometrika 93: 509–524): each test i has a
	// weight w_i ≥ 0, the weights of a family averaging 1
	// (MetricInput.Weight), and BH is applied to p_i/w_i, so a test with
	// a large weight gets a larger share of the error rate; the false
	// discovery rate stays at most alpha (independent tests) whatever the
	// weights, provided they do not depend on the tests' outcomes. A
	// profile weights its functions by their share of the time.
	// AdjustWeighted gives the adjusted p-values; without weights it is
	// BH.
	CorrectionWeightedBH = "weighted-bh"
)

// familySize is the number of tests Adjust corrects ps over: the defined
// p-values (an undefined one is no test).
func familySize(ps []Float) int {
	n := 0
	for _, p := range ps {
		if p.Defined() {
			n++
		}
	}
	return n
}

// Adjust returns the p-values adjusted for multiple comparisons by method
// (holm, bonferroni or none). Undefined p-values stay undefined and do not
// count toward the number of tests. It returns nil for an unknown method.
func Adjust(ps []Float, method string) []Float {
	out, idx := undefinedOut(ps)
	m := float64(len(idx))
	switch method {
	case CorrectionNone:
		for _, i := range idx {
			out[i] = ps[i]
		}
	case CorrectionBonferroni:
		for _, i := range idx {
			out[i] = Float(math.Min(1, float64(ps[i])*m))
		}
	case CorrectionHolm:
		// Step-down: the j-th smallest p (0-based) is multiplied by m−j,
		// then made monotone so a larger p never gets a smaller adjustment.
		sortByP(idx, ps)
		run := 0.0
		for j, i := range idx {
			adj := math.Min(1, float64(ps[i])*(m-float64(j)))
			run = math.Max(run, adj)
			out[i] = Float(run)
		}
	case CorrectionBH:
		// Step-up: the j-th smallest p (1-based) is multiplied by m/j,
		// then made monotone from the largest down.
		sortByP(idx, ps)
		run := 1.0
		for j := len(idx) - 1; j >= 0; j-- {
			i := idx[j]
			run = math.Min(run, float64(ps[i])*m/float64(j+1))
			out[i] = Float(run)
		}
	case CorrectionWeightedBH:
		return AdjustWeighted(ps, nil)
	default:
		return nil
	}
	return out
}

// AdjustWeighted returns the p-values ps adjusted by the weighted
// Benjamini–Hochberg procedure (CorrectionWeightedBH) with weights ws
// (nil: all 1, which is BH). The weights of the defined p-values are
// rescaled to average 1 over them; an undefined p-value stays undefined
// and counts for nothing; a weight that is not a finite number ≥ 0 counts
// as 0.
//
// With R rejections of k tests, Genovese et al.'s procedure rejects p_i ≤
// α·w_i·R/k. Here each test's level is capped at α, p_i ≤ α·min(1,
// w_i·R/k), so that a heavy test is never reported at p_i > α and its
// adjusted p is never below its p: still a step-up procedure whose
// rejections satisfy p_i ≤ α·w_i·R/k and that only shrinks as a p-value
// grows, so Blanchard & Roquain's self-consistency and dependency-control
// conditions (2008, "Two simple sufficient conditions for FDR control",
// Electron. J. Statist. 2: 963–992; their weighted step-up under independence or
// positive regression dependence) give FDR ≤ α·Σ_{null} w_i/k ≤ α. With
// every weight 1 the cap never binds (R ≤ k) and this is BH.
//
// The adjusted p of test i is the smallest α at which it is rejected:
// with c_j(r) = min(1, w_j·r/k) and s_r the r-th smallest of p_j/c_j(r),
// the procedure at level α rejects j when p_j/c_j(r*) ≤ α for r* the
// largest r with s_r ≤ α, so i is rejected at α exactly when some r has
// s_r ≤ α and p_i/c_i(r) ≤ α: adj_i = min over r of max(s_r,
// p_i/c_i(r)), capped at 1. O(k² log k), k a few hundred at most.
func AdjustWeighted(ps []Float, ws []float64) []Float {
	out, idx := undefinedOut(ps)
	k := len(idx)
	if k == 0 {
		return out
	}
	w := make([]float64, k)
	sum := 0.0
	for j, i := range idx {
		w[j] = 1
		if ws != nil {
			w[j] = ws[i]
			if !(w[j] >= 0) || math.IsInf(w[j], 1) {
				w[j] = 0
			}
		}
		sum += w[j]
	}
	for j := range w {
		if sum > 0 {
			w[j] *= float64(k) / sum
		} else {
			w[j] = 1
		}
	}
	// q(j, r) is p_j/c_j(r): +Inf for a weight of 0 (never rejected).
	q := func(j, r int) float64 {
		c := math.Min(1, w[j]*float64(r)/float64(k))
		if c <= 0 {
			return math.Inf(1)
		}
		return float64(ps[idx[j]]) / c
	}
	s := make([]float64, k+1) // s[r], r = 1 … k
	buf := make([]float64, k)
	for r := 1; r <= k; r++ {
		for j := range buf {
			buf[j] = q(j, r)
		}
		slices.Sort(buf)
		s[r] = buf[r-1]
	}
	for j, i := range idx {
		best := math.Inf(1)
		for r := 1; r <= k; r++ {
			best = math.Min(best, math.Max(s[r], q(j, r)))
		}
		out[i] = Float(math.Min(1, best))
	}
	return out
}

// undefinedOut is an adjustment of ps with every value undefined, and
// the indices of ps's defined p-values (the tests).
func undefinedOut(ps []Float) ([]Float, []int) {
	out := make([]Float, len(ps))
	var idx []int
	for i, p := range ps {
		out[i] = undefined()
		if p.Defined() {
			idx = append(idx, i)
		}
	}
	return out, idx
}

// sortByP orders the indices idx by their p-values in ps, ties in order.
func sortByP(idx []int, ps []Float) {
	slices.SortStableFunc(idx, func(x, y int) int {
		switch {
		case ps[x] < ps[y]:
			return -1
		case ps[x] > ps[y]:
			return 1
		}
		return 0
	})
}

// Across returns the options of one test among m asked together, each
// at level Alpha/m with its interval at confidence 1 − (1 − Confidence)/m:
// Bonferroni's inequality makes the chance that any of the m tests
// rejects a true null at most Alpha, and the m intervals hold their
// estimands all at once with at least the original confidence (Dunn 1961,
// "Multiple comparisons among means", JASA 56(293): 52–64). perflab watch
// uses it for its per-commit lines, one comparison with the reference for
// each commit of the range, where neither the number of lines nor their
// order is known when a line is printed (a step-up procedure such as
// Benjamini–Hochberg needs every p first). m ≤ 1 returns o unchanged.
// The verdict is still decide's: a test whose discrete floor lies above
// Alpha/m is made inconclusive with the reason (guardFloors).
func (o Options) Across(m int) Options {
	if m <= 1 {
		return o
	}
	o.Alpha /= float64(m)
	o.Confidence = 1 - (1-o.Confidence)/float64(m)
	return o
}
