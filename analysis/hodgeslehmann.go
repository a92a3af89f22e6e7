package analysis

import (
	"math/rand/v2"
	"slices"
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
	slices.Sort(as)
	slices.Sort(bs)
	total := len(as) * len(bs)
	// A fixed seed keeps the pivot sequence, and so the running time,
	// reproducible; the result does not depend on it.
	rng := rand.New(rand.NewPCG(uint64(len(as)), uint64(len(bs))))
	hi := selectDiff(as, bs, total/2, rng)
	if total%2 == 1 {
		return defined(hi * scale)
	}
	lo := selectDiff(as, bs, total/2-1, rng)
	return defined(mid(lo, hi) * scale)
}

// selectDiff returns the k-th smallest (0-based) of b[j] − a[i] over all
// pairs, for sorted a and b.
func selectDiff(a, b []float64, k int, rng *rand.Rand) float64 {
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
