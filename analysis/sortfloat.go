package analysis

import (
	"math"
	"slices"
)

// radixMin is the length from which sorting uses a radix sort.
const radixMin = 512

// Radix sort digits: radixDigits digits of radixBits bits cover a uint64.
const (
	radixBits   = 11
	radixDigits = (64 + radixBits - 1) / radixBits
	radixMask   = 1<<radixBits - 1
)

// sortFloats sorts xs in increasing order. Long slices of non-NaN values
// are sorted by an LSD radix sort of order-preserving integer keys (linear
// time; −0 sorts before +0); the rest by slices.Sort.
func sortFloats(xs []float64) {
	if len(xs) < radixMin || hasNaN(xs) {
		slices.Sort(xs)
		return
	}
	keys, _ := radixSort(xs, false)
	for i, k := range keys {
		xs[i] = keyFloat(k)
	}
}

// sortedWithRanks returns a sorted copy of xs and the average rank
// (1-based, ties averaged) of each value of xs within xs, in the order of
// xs. Long slices of non-NaN values are radix sorted with their positions,
// which gives the ranks in linear time.
func sortedWithRanks(xs []float64) (sorted, ranks []float64) {
	n := len(xs)
	if n < radixMin || hasNaN(xs) {
		sorted = sortedCopy(xs)
		return sorted, ranksInOrder(xs, sorted)
	}
	keys, pos := radixSort(xs, true)
	sorted = make([]float64, n)
	for i, k := range keys {
		sorted[i] = keyFloat(k)
	}
	ranks = make([]float64, n)
	for i := 0; i < n; {
		j := i + 1
		for j < n && sorted[j] == sorted[i] { // −0 == +0: one tie group
			j++
		}
		r := float64(i+j+1) / 2 // mean of ranks i+1 .. j
		for _, p := range pos[i:j] {
			ranks[p] = r
		}
		i = j
	}
	return sorted, ranks
}

func hasNaN(xs []float64) bool {
	return slices.ContainsFunc(xs, func(x float64) bool { return x != x })
}

// radixSort returns the keys (floatKey) of xs, which holds no NaN, in
// increasing order and, when withPos, the position in xs of each. It is an
// LSD radix sort by digits of radixBits bits that skips digits all keys
// share.
func radixSort(xs []float64, withPos bool) ([]uint64, []uint32) {
	n := len(xs)
	keys := make([]uint64, 2*n)
	src, dst := keys[:n], keys[n:]
	var psrc, pdst []uint32
	if withPos {
		pos := make([]uint32, 2*n)
		psrc, pdst = pos[:n], pos[n:]
		for i := range psrc {
			psrc[i] = uint32(i)
		}
	}
	var counts [radixDigits][1 << radixBits]int
	for i, x := range xs {
		k := floatKey(x)
		src[i] = k
		for d := range radixDigits {
			counts[d][k>>(radixBits*d)&radixMask]++
		}
	}
	for d := range radixDigits {
		c := &counts[d]
		shift := radixBits * uint(d)
		if c[src[0]>>shift&radixMask] == n {
			continue // every key has this digit: the pass would change nothing
		}
		sum := 0
		for v := range c {
			c[v], sum = sum, sum+c[v]
		}
		if withPos {
			for i, k := range src {
				b := k >> shift & radixMask
				dst[c[b]] = k
				pdst[c[b]] = psrc[i]
				c[b]++
			}
			psrc, pdst = pdst, psrc
		} else {
			for _, k := range src {
				b := k >> shift & radixMask
				dst[c[b]] = k
				c[b]++
			}
		}
		src, dst = dst, src
	}
	return src, psrc
}

// floatKey maps a float64 to a uint64 with the same order (for non-NaN
// values, −0 below +0).
func floatKey(x float64) uint64 {
	b := math.Float64bits(x)
	if b>>63 == 1 {
		return ^b
	}
	return b | 1<<63
}

// keyFloat inverts floatKey.
func keyFloat(k uint64) float64 {
	if k>>63 == 1 {
		return math.Float64frombits(k &^ (1 << 63))
	}
	return math.Float64frombits(^k)
}
