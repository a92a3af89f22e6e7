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
	out := make([]Float, len(ps))
	var idx []int
	for i, p := range ps {
		out[i] = undefined()
		if p.Defined() {
			idx = append(idx, i)
		}
	}
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
	default:
		return nil
	}
	return out
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
