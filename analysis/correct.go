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
		slices.SortStableFunc(idx, func(x, y int) int {
			switch {
			case ps[x] < ps[y]:
				return -1
			case ps[x] > ps[y]:
				return 1
			}
			return 0
		})
		run := 0.0
		for j, i := range idx {
			adj := math.Min(1, float64(ps[i])*(m-float64(j)))
			run = math.Max(run, adj)
			out[i] = Float(run)
		}
	default:
		return nil
	}
	return out
}
