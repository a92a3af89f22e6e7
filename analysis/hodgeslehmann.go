package analysis

import (
	"math"
	"math/rand/v2"
)

// HodgesLehmann returns the Hodges–Lehmann estimate of the shift from a to
// b: the median of all nA·nB differences b[j] − a[i]. It never builds the
// nA·nB differences: it selects the middle ones from the implicitly sorted
// difference matrix (Monahan's randomized selection, expected
// O((nA+nB)·log(nA·nB)) time). It is undefined for an empty sample.
func HodgesLehmann(a, b []float64) Float {
	if len(a) == 0 || len(b) == 0 {
		return undefined()
	}
	scale := scaleOf(a, b)
	as, bs := scaled(a, scale), scaled(b, scale)
	sortFloats(as)
	sortFloats(bs)
	return hodgesLehmannScaled(as, bs, scale)
}

// hodgesLehmannScaled is HodgesLehmann of the non-empty samples as·scale
// and bs·scale, as and bs sorted.
func hodgesLehmannScaled(as, bs []float64, scale float64) Float {
	total := len(as) * len(bs)
	// A fixed seed keeps the pivot sequence, and so the running time,
	// reproducible; the result does not depend on it.
	rng := rand.New(rand.NewPCG(uint64(len(as)), uint64(len(bs))))
	lo, hi := selectDiff(as, bs, total/2, rng)
	if total%2 == 1 {
		return defined(hi * scale)
	}
	return defined(mid(lo, hi) * scale)
}

// selectDiff returns the (k−1)-th and the k-th smallest (0-based) of
// b[j] − a[i] over all pairs, for sorted a and b (for k = 0 both are the
// smallest).
func selectDiff(a, b []float64, k int, rng *rand.Rand) (prev, kth float64) {
	kth = selectDiffK(a, b, k, rng)
	return prevDiff(a, b, kth, k), kth
}

// prevDiff returns the (k−1)-th smallest of b[j] − a[i] given v, the k-th
// (v itself for k = 0), in one O(m+n) pass.
func prevDiff(a, b []float64, v float64, k int) float64 {
	if k == 0 {
		return v
	}
	lt, j := 0, 0
	best := math.Inf(-1)
	for i := range a {
		// As a[i] grows, more of b lies below v + a[i].
		for j < len(b) && b[j]-a[i] < v {
			j++
		}
		lt += j
		if j > 0 {
			best = max(best, b[j-1]-a[i])
		}
	}
	if lt < k {
		return v // the (k−1)-th is tied with the k-th
	}
	return best // lt == k: the largest difference below v
}

// selectDiffK returns the k-th smallest (0-based) of b[j] − a[i] over all
// pairs, for sorted a and b.
func selectDiffK(a, b []float64, k int, rng *rand.Rand) float64 {
	m, n := len(a), len(b)
	// Row i holds b[j] − a[i], increasing in j; the candidates for the
	// answer in row i are columns lo[i] ≤ j < hi[i]. Everything left of lo
	// is known to rank below k, everything from hi on above k.
	lo := make([]int, m)
	hi := make([]int, m)
	for i := range hi {
		hi[i] = n
	}
	cntLT := make([]int, m)
	cntLE := make([]int, m)
	for {
		cand := 0
		for i := range m {
			cand += hi[i] - lo[i]
		}
		if cand <= 2*(m+n) {
			// Few candidates left: select among them directly.
			below := 0
			vals := make([]float64, 0, cand)
			for i := range m {
				below += lo[i]
				for j := lo[i]; j < hi[i]; j++ {
					vals = append(vals, b[j]-a[i])
				}
			}
			return selectK(vals, k-below)
		}
		// A uniformly random candidate as pivot.
		r := rng.IntN(cand)
		var pivot float64
		for i := range m {
			w := hi[i] - lo[i]
			if r < w {
				pivot = b[lo[i]+r] - a[i]
				break
			}
			r -= w
		}
		// Count, per row, differences < pivot and ≤ pivot. As i grows a[i]
		// grows, so the column boundaries only move right.
		lt, le := 0, 0
		jl, je := 0, 0
		for i := range m {
			// b[j] − a[i] < pivot  ⇔  b[j] < pivot + a[i]; the threshold rises with i.
			for jl < n && b[jl]-a[i] < pivot {
				jl++
			}
			for je < n && b[je]-a[i] <= pivot {
				je++
			}
			cntLT[i], cntLE[i] = jl, je
			lt += jl
			le += je
		}
		switch {
		case k < lt:
			for i := range m {
				hi[i] = min(hi[i], cntLT[i])
			}
		case k < le:
			return pivot
		default:
			for i := range m {
				lo[i] = max(lo[i], cntLE[i])
			}
		}
	}
}
