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

// MannWhitneyShift returns MannWhitneyU(a, b) and the Hodges–Lehmann
// estimate of a's shift over b, HodgesLehmann(b, a) (the median of
// a[i] − b[j]), bit for bit, sorting each sample once for both: it sorts
// a and b in place.
func MannWhitneyShift(a, b []float64) (MannWhitney, []string, Float) {
	if len(a) < radixMin || len(b) < radixMin || hasNaN(a) || hasNaN(b) {
		mw, ws := MannWhitneyU(a, b)
		return mw, ws, HodgesLehmann(b, a)
	}
	// Radix sorting orders the values by floatKey, and dividing by the
	// positive power of two scale keeps that order (−0 stays below +0,
	// values that round together become equal): the scaled sorted
	// samples are exactly what HodgesLehmann sorts.
	sortFloats(a)
	sortFloats(b)
	mw, ws := mannWhitneyRanks(len(a), len(b), rankPair(a, b))
	scale := scaleOf(b, a)
	return mw, ws, hodgesLehmannScaled(scaled(b, scale), scaled(a, scale), scale)
}

// hodgesLehmannScaled is HodgesLehmann of the non-empty samples as·scale
// and bs·scale, as and bs sorted.
func hodgesLehmannScaled(as, bs []float64, scale float64) Float {
	total := len(as) * len(bs)
	// A fixed seed keeps the pivot sequence, and so the running time,
	// reproducible; the result does not depend on it.
	rng := rand.New(rand.NewPCG(uint64(len(as)), uint64(len(bs))))
	lo, hi := selectDiff(as, bs, nil, total/2, rng, hlSamples)
	if total%2 == 1 {
		return defined(hi * scale)
	}
	return defined(mid(lo, hi) * scale)
}

// prevDiff returns the (k−1)-th smallest of b[j] − a[i] given v, the k-th
// (v itself for k = 0), in one O(m+n) pass. With first non-nil only the
// entries j ≥ first[i] of row i count (see selectDiff).
func prevDiff(a, b []float64, first []int, v float64, k int) float64 {
	if k == 0 {
		return v
	}
	lt, j := 0, 0
	best := math.Inf(-1)
	for i := range a {
		f := 0
		if first != nil {
			f = first[i]
		}
		// As a[i] grows, more of b lies below v + a[i].
		jj := max(j, f)
		for jj < len(b) && b[jj]-a[i] < v {
			jj++
		}
		if jj > f {
			lt += jj - f
			best = max(best, b[jj-1]-a[i])
			j = jj
		}
	}
	if lt < k {
		return v // the (k−1)-th is tied with the k-th
	}
	return best // lt == k: the largest difference below v
}

// hlSamples is the number of candidate differences the Hodges–Lehmann
// estimate samples per round of selectDiff to choose its pivots.
const hlSamples = 2048

// hlDirect: selectDiff selects among the remaining candidates directly
// once there are at most hlDirect·(m+n) of them.
const hlDirect = 2

// selectDiff returns the (k−1)-th and the k-th smallest (0-based) of
// b[j] − a[i] over all pairs, for sorted a and b (for k = 0 both are the
// smallest). Each round samples the given number of candidates (one
// uniformly in each of as many equal strata) and takes as pivots the two
// sample quantiles that bracket the k-th with high probability
// (Floyd–Rivest style): with 2,048 samples the candidates shrink about
// 13-fold per round, so a few O(m+n) passes suffice where a single random
// pivot needs O(log(m·n)). The result does not depend on the random
// numbers, only the running time does.
//
// With first non-nil, row i holds only the entries j ≥ first[i] (first
// non-increasing: a staircase such as the triangle of Walsh sums, see
// walshMedian), and k ranks among those.
func selectDiff(a, b []float64, first []int, k int, rng *rand.Rand, samples int) (prev, kth float64) {
	s := newDiffSelector(a, b, first, k)
	picks := make([]int, samples)
	sample := make([]float64, samples)
	for {
		cand, below := s.candidates()
		if cand <= hlDirect*(len(a)+len(b)) {
			return s.direct(cand, below)
		}
		s.sample(rng, cand, picks, sample)
		// The k-th is at fraction f of the candidates; its position among
		// the samples is at most as spread as a binomial (less with
		// stratified picks), so ±3.5 binomial standard deviations (plus one)
		// around f·s bracket it.
		f := float64(s.kAll-below) / float64(cand)
		d := 3.5*math.Sqrt(float64(samples)*f*(1-f)) + 1
		l, h := int(f*float64(samples)-d), int(math.Ceil(f*float64(samples)+d))
		if l < 0 && h >= samples {
			// Too few samples to bracket: one random candidate as pivot.
			l = rng.IntN(samples)
		}
		if l >= 0 && s.narrowLow(sample[l]) {
			return prevDiff(a, b, first, sample[l], k), sample[l]
		}
		if h < samples && s.narrowHigh(sample[h]) {
			return prevDiff(a, b, first, sample[h], k), sample[h]
		}
	}
}

// diffSelector is selectDiff's state. Row i holds b[j] − a[i], increasing
// in j; the candidates for the answer in row i are columns lo[i] ≤ j <
// hi[i]. Everything left of lo is known to rank below k, everything from
// hi on above k. Counts below include the columns before first[i], which
// hold no entries: kAll is k shifted by their number.
type diffSelector struct {
	a, b   []float64
	first  []int
	k      int
	kAll   int
	lo, hi []int
	cnt    []int // each row's count at the last pivot counted
}

func newDiffSelector(a, b []float64, first []int, k int) *diffSelector {
	m, n := len(a), len(b)
	s := &diffSelector{a: a, b: b, first: first, k: k, kAll: k, lo: make([]int, m), hi: make([]int, m), cnt: make([]int, m)}
	for i := range s.hi {
		s.hi[i] = n
	}
	if first != nil {
		copy(s.lo, first)
		for _, f := range first {
			s.kAll += f
		}
	}
	return s
}

// firstOf is the first column of row i that holds an entry.
func (s *diffSelector) firstOf(i int) int {
	if s.first == nil {
		return 0
	}
	return s.first[i]
}

// candidates returns the number of candidates left and the number of
// entries known to rank below them.
func (s *diffSelector) candidates() (cand, below int) {
	for i := range s.lo {
		cand += s.hi[i] - s.lo[i]
		below += s.lo[i]
	}
	return cand, below
}

// direct selects among few candidates directly. The (k−1)-th is the
// largest candidate before the k-th or, when the k-th is the smallest
// candidate, the largest difference left of the candidates.
func (s *diffSelector) direct(cand, below int) (prev, kth float64) {
	a, b := s.a, s.b
	vals := make([]float64, 0, cand)
	for i := range s.lo {
		for j := s.lo[i]; j < s.hi[i]; j++ {
			vals = append(vals, b[j]-a[i])
		}
	}
	kk := s.kAll - below
	kth = selectK(vals, kk)
	prev = math.Inf(-1)
	for _, v := range vals[:kk] {
		prev = max(prev, v)
	}
	if kk == 0 {
		for i := range s.lo {
			if s.lo[i] > s.firstOf(i) {
				prev = max(prev, b[s.lo[i]-1]-a[i])
			}
		}
	}
	if s.k == 0 {
		prev = kth
	}
	return prev, kth
}

// sample fills sample with candidates, sorted, by jittered systematic
// sampling (one uniform pick in each of len(picks) equal strata, so the
// picks come sorted); the picks are mapped to (row, column) in one walk
// over the rows.
func (s *diffSelector) sample(rng *rand.Rand, cand int, picks []int, sample []float64) {
	samples := len(picks)
	for k := range picks {
		from, to := k*cand/samples, (k+1)*cand/samples
		picks[k] = from + rng.IntN(max(1, to-from))
	}
	row, before := 0, 0
	for k, r := range picks {
		for r >= before+s.hi[row]-s.lo[row] {
			before += s.hi[row] - s.lo[row]
			row++
		}
		sample[k] = s.b[s.lo[row]+r-before] - s.a[row]
	}
	sortFloats(sample)
}

// count sets cnt[i] to the number of differences in row i below pivot
// (or, with orEqual, up to it) and returns their total. pivot is a
// candidate, so everything left of lo is below it and everything from hi
// on above it: each count lies in [lo[i], hi[i]]. As i grows a[i] grows,
// so the count can only move right.
func (s *diffSelector) count(pivot float64, orEqual bool) int {
	// jw is a lower bound of the full row's count (columns from 0), which
	// grows with i; it is known once a row's count passes first.
	total, jw := 0, 0
	b, lo, hi := s.b, s.lo, s.hi
	for i, ai := range s.a {
		j := max(jw, lo[i])
		if orEqual {
			for j < hi[i] && b[j]-ai <= pivot {
				j++
			}
		} else {
			for j < hi[i] && b[j]-ai < pivot {
				j++
			}
		}
		s.cnt[i] = j
		total += j
		if j > s.firstOf(i) {
			jw = j
		}
	}
	return total
}

// below records that the k-th is below the last pivot counted; above,
// that it is above.
func (s *diffSelector) below() {
	for i := range s.hi {
		s.hi[i] = min(s.hi[i], s.cnt[i])
	}
}

func (s *diffSelector) above() {
	for i := range s.lo {
		s.lo[i] = max(s.lo[i], s.cnt[i])
	}
}

// narrowLow and narrowHigh move the bounds past a pivot that is expected
// to lie below (above) the k-th, counting the other side of a tie only
// when the expectation fails; they report whether the pivot is the k-th.
func (s *diffSelector) narrowLow(pivot float64) bool {
	if s.kAll >= s.count(pivot, true) {
		s.above()
		return false
	}
	if s.kAll < s.count(pivot, false) {
		s.below()
		return false
	}
	return true
}

func (s *diffSelector) narrowHigh(pivot float64) bool {
	if s.kAll < s.count(pivot, false) {
		s.below()
		return false
	}
	if s.kAll >= s.count(pivot, true) {
		s.above()
		return false
	}
	return true
}
