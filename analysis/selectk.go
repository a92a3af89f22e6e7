package analysis

import (
	"math"
	"slices"
)

// selectK partially reorders xs so that xs[k] holds the k-th smallest value
// (0-based), everything before it is <= xs[k] and everything after is >=.
// It runs in expected linear time (Hoare's quickselect, median-of-three
// pivot, falling back to sorting on small ranges).
func selectK(xs []float64, k int) float64 {
	lo, hi := 0, len(xs)-1
	for hi-lo > 16 {
		// Median of three as pivot, moved to lo.
		mid := lo + (hi-lo)/2
		if xs[mid] < xs[lo] {
			xs[mid], xs[lo] = xs[lo], xs[mid]
		}
		if xs[hi] < xs[lo] {
			xs[hi], xs[lo] = xs[lo], xs[hi]
		}
		if xs[hi] < xs[mid] {
			xs[hi], xs[mid] = xs[mid], xs[hi]
		}
		pivot := xs[mid]
		i, j := lo, hi
		for i <= j {
			for xs[i] < pivot {
				i++
			}
			for xs[j] > pivot {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	slices.Sort(xs[lo : hi+1])
	return xs[k]
}

// medianInPlace returns the median of xs, reordering xs. It returns NaN for
// an empty slice.
func medianInPlace(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	hi := selectK(xs, n/2)
	if n%2 == 1 {
		return hi
	}
	// After selectK everything in xs[:n/2] is <= hi; the lower middle value
	// is their maximum.
	lo := xs[0]
	for _, x := range xs[1 : n/2] {
		if x > lo {
			lo = x
		}
	}
	return mid(lo, hi)
}

// mid returns (a+b)/2 without overflowing for huge magnitudes.
func mid(a, b float64) float64 {
	m := (a + b) / 2
	if math.IsInf(m, 0) {
		m = a/2 + b/2
	}
	return m
}

// quantileIndex returns the lower order statistic index (0-based, clamped
// to [0, n−1]) and the interpolation fraction of the type-7 p-quantile of
// n values.
func quantileIndex(n int, p float64) (int, float64) {
	h := p * float64(n-1)
	i := int(math.Floor(h))
	if i < 0 {
		return 0, 0
	}
	return i, h - float64(i)
}
