package analysis

import (
	"math"
	"slices"
)

// radixMin is the length from which sortFloats uses a radix sort.
const radixMin = 512

// sortFloats sorts xs in increasing order. Long slices of non-NaN values
// are sorted by an LSD radix sort of order-preserving integer keys (linear
// time; −0 sorts before +0); the rest by slices.Sort.
func sortFloats(xs []float64) {
	n := len(xs)
	if n < radixMin {
		slices.Sort(xs)
		return
	}
	keys := make([]uint64, 2*n)
	src, dst := keys[:n], keys[n:]
	var counts [8][256]int
	for i, x := range xs {
		if x != x { // NaN: keep slices.Sort's order of NaNs
			slices.Sort(xs)
			return
		}
		k := floatKey(x)
		src[i] = k
		for d := range 8 {
			counts[d][byte(k>>(8*d))]++
		}
	}
	for d := range 8 {
		c := &counts[d]
		if c[byte(src[0]>>(8*d))] == n {
			continue // every key has this digit: nothing to do
		}
		sum := 0
		for v := range c {
			c[v], sum = sum, sum+c[v]
		}
		shift := 8 * uint(d)
		for _, k := range src {
			b := byte(k >> shift)
			dst[c[b]] = k
			c[b]++
		}
		src, dst = dst, src
	}
	for i, k := range src {
		xs[i] = keyFloat(k)
	}
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
