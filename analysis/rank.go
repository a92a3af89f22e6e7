package analysis

import "slices"

// Rank statistics are computed from sorted copies of the samples instead
// of by sorting (value, position) pairs: a sorted sample is what the
// summaries, the bootstrap and the Hodges–Lehmann estimate need anyway, so
// each sample of a metric is sorted once and every rank test shares it.
// Ranks are averaged over ties (1-based), so every rank is a multiple of ½
// and every rank sum below 2⁵² is exact in float64, whatever the order of
// summation.

// sortedCopy returns xs sorted in increasing order, leaving xs alone.
func sortedCopy(xs []float64) []float64 {
	s := slices.Clone(xs)
	sortFloats(s)
	return s
}

// pooledRanks holds the rank sums of groups ranked together.
type pooledRanks struct {
	n       int       // values in all groups
	sums    []float64 // rank sum of each group
	tieTerm float64   // Σ (t³ − t) over groups of t tied values, in increasing order of value
	ties    bool
}

// rankGroups ranks the concatenation of the sorted groups and returns
// each group's rank sum and the tie term.
func rankGroups(sorted ...[]float64) pooledRanks {
	var pooled []float64
	switch len(sorted) {
	case 1:
		pooled = sorted[0]
	case 2:
		return rankPair(sorted[0], sorted[1])
	default:
		for _, g := range sorted {
			pooled = append(pooled, g...)
		}
		slices.Sort(pooled)
	}
	r := pooledRanks{n: len(pooled), sums: make([]float64, len(sorted))}
	n := len(pooled)
	for i := 0; i < n; {
		j := i + 1
		for j < n && pooled[j] == pooled[i] {
			j++
		}
		if t := float64(j - i); t > 1 {
			r.tieTerm += t*t*t - t
			r.ties = true
		}
		i = j
	}
	for gi, g := range sorted {
		sum, p := 0.0, 0
		for i := 0; i < len(g); {
			v := g[i]
			j := i + 1
			for j < len(g) && g[j] == v {
				j++
			}
			for p < n && pooled[p] < v {
				p++
			}
			u := p
			for u < n && pooled[u] == v {
				u++
			}
			if u == p { // v is NaN: only finite values are ranked meaningfully
				u = p + 1
			}
			sum += float64(j-i) * (float64(p+u+1) / 2) // mean of ranks p+1 .. u
			i = j
		}
		r.sums[gi] = sum
	}
	return r
}

// rankPair is rankGroups of two sorted groups, walking both at once.
func rankPair(a, b []float64) pooledRanks {
	r := pooledRanks{n: len(a) + len(b), sums: make([]float64, 2)}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		// The next distinct value and how often each group holds it.
		var v float64
		switch {
		case j == len(b) || (i < len(a) && a[i] <= b[j]):
			v = a[i]
		default:
			v = b[j]
		}
		i0, j0 := i, j
		for i < len(a) && a[i] == v {
			i++
		}
		for j < len(b) && b[j] == v {
			j++
		}
		if i == i0 && j == j0 { // NaN: only finite values are ranked meaningfully
			if i < len(a) && a[i] == a[i] {
				j++
			} else {
				i++
			}
		}
		ca, cb := i-i0, j-j0
		p := i0 + j0 // values ranked below v
		t := ca + cb
		avg := float64(p+p+t+1) / 2 // mean of ranks p+1 .. p+t
		r.sums[0] += float64(ca) * avg
		r.sums[1] += float64(cb) * avg
		if tf := float64(t); t > 1 {
			r.tieTerm += tf*tf*tf - tf
			r.ties = true
		}
	}
	return r
}

// ranksInOrder returns the average rank of each value of xs within xs, in
// the order of xs, given sorted, the sorted copy of xs.
func ranksInOrder(xs, sorted []float64) []float64 {
	n := len(sorted)
	// avg[k] is the average rank of the tie group that sorted[k] belongs to.
	avg := make([]float64, n)
	for i := 0; i < n; {
		j := i + 1
		for j < n && sorted[j] == sorted[i] {
			j++
		}
		r := float64(i+j+1) / 2
		for k := i; k < j; k++ {
			avg[k] = r
		}
		i = j
	}
	ranks := make([]float64, len(xs))
	for i, x := range xs {
		// Lower bound of x in sorted (branch-free halving).
		lo, size := 0, n
		for size > 1 {
			half := size / 2
			if sorted[lo+half] < x {
				lo += half
			}
			size -= half
		}
		if sorted[lo] < x {
			lo++
		}
		ranks[i] = avg[min(lo, n-1)]
	}
	return ranks
}
