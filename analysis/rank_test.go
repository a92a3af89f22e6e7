package analysis

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// refRanks ranks the concatenation of the groups the obvious way, by
// sorting (value, position) pairs: the reference for rankGroups and
// ranksInOrder.
func refRanks(groups ...[]float64) (ranks []float64, tieTerm float64, ties bool) {
	type iv struct {
		v float64
		i int
	}
	var all []iv
	for _, g := range groups {
		for _, v := range g {
			all = append(all, iv{v, len(all)})
		}
	}
	slices.SortFunc(all, func(x, y iv) int {
		switch {
		case x.v < y.v:
			return -1
		case x.v > y.v:
			return 1
		}
		return 0
	})
	n := len(all)
	ranks = make([]float64, n)
	for i := 0; i < n; {
		j := i + 1
		for j < n && all[j].v == all[i].v {
			j++
		}
		for k := i; k < j; k++ {
			ranks[all[k].i] = float64(i+j+1) / 2
		}
		if t := float64(j - i); t > 1 {
			tieTerm += t*t*t - t
			ties = true
		}
		i = j
	}
	return ranks, tieTerm, ties
}

// randomSample draws n values of one of several shapes: continuous, few
// distinct integers (many ties), signed zeros, huge and tiny magnitudes.
func randomSample(rng *rand.Rand, n, kind int) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		switch kind {
		case 0:
			xs[i] = 100 * math.Exp(0.05*rng.NormFloat64())
		case 1:
			xs[i] = float64(rng.IntN(7) - 3)
		case 2:
			xs[i] = []float64{0, math.Copysign(0, -1), 1, -1}[rng.IntN(4)]
		case 3:
			xs[i] = math.Round(rng.NormFloat64()*4) * 1e300
		case 4:
			xs[i] = rng.NormFloat64() * 1e-310 // subnormal
		default:
			xs[i] = []float64{math.Inf(1), math.Inf(-1), math.MaxFloat64, -math.MaxFloat64, 5}[rng.IntN(5)]
		}
	}
	return xs
}

func TestSortFloatsMatchesSlicesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		n := rng.IntN(3 * radixMin)
		xs := randomSample(rng, n, trial%6)
		got, want := slices.Clone(xs), slices.Clone(xs)
		sortFloats(got)
		slices.Sort(want)
		for i := range got {
			// Equal values are interchangeable, except that the radix
			// sort puts −0 before +0 (slices.Sort leaves them in any order).
			if got[i] != want[i] {
				t.Fatalf("trial %d (n=%d): sorted[%d] = %v, want %v", trial, n, i, got[i], want[i])
			}
		}
		if n >= radixMin && !slices.IsSortedFunc(got, func(x, y float64) int { return cmp.Compare(floatKey(x), floatKey(y)) }) {
			t.Fatalf("trial %d: −0 after +0 or out of order", trial)
		}
	}
	xs := []float64{3, math.NaN(), 1, 2}
	xs = append(xs, make([]float64, radixMin)...)
	sortFloats(xs)
	if !math.IsNaN(xs[0]) || xs[len(xs)-1] != 3 {
		t.Errorf("with NaN: got first %v last %v, want NaN first as slices.Sort", xs[0], xs[len(xs)-1])
	}
}

func TestRankGroupsMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 400 {
		k := 1 + rng.IntN(4)
		kind := trial % 6
		var groups, sorted [][]float64
		for range k {
			n := 1 + rng.IntN(40)
			if trial%10 == 0 {
				n = 1 + rng.IntN(3000)
			}
			g := randomSample(rng, n, kind)
			groups = append(groups, g)
			sorted = append(sorted, sortedCopy(g))
		}
		ranks, tieTerm, ties := refRanks(groups...)
		r := rankGroups(sorted...)
		if r.tieTerm != tieTerm || r.ties != ties || r.n != len(ranks) {
			t.Fatalf("trial %d: tie term %v ties %v n %d, want %v %v %d", trial, r.tieTerm, r.ties, r.n, tieTerm, ties, len(ranks))
		}
		off := 0
		for gi, g := range groups {
			sum := 0.0
			for _, x := range ranks[off : off+len(g)] {
				sum += x
			}
			off += len(g)
			if r.sums[gi] != sum {
				t.Fatalf("trial %d: rank sum of group %d = %v, want %v", trial, gi, r.sums[gi], sum)
			}
		}
		own, _, _ := refRanks(groups[0])
		if got := ranksInOrder(groups[0], sorted[0]); !slices.Equal(got, own) {
			t.Fatalf("trial %d: ranksInOrder = %v, want %v", trial, got, own)
		}
		s, ranks := sortedWithRanks(groups[0])
		if !slices.Equal(s, sorted[0]) || !slices.Equal(ranks, own) {
			t.Fatalf("trial %d (n=%d): sortedWithRanks differs from sorting and ranking", trial, len(groups[0]))
		}
	}
}

// TestHodgesLehmannLargeMatchesBruteForce covers samples big enough for
// many rounds of pivoting before the direct selection.
func TestHodgesLehmannLargeMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 12 {
		na, nb := 200+rng.IntN(300), 200+rng.IntN(300)
		kind := []int{0, 1, 2, 0}[trial%4]
		a, b := randomSample(rng, na, kind), randomSample(rng, nb, kind)
		for i := range b {
			b[i] += float64(trial % 3)
		}
		if got, want := HodgesLehmann(a, b), bruteHL(a, b); float64(got) != want {
			t.Fatalf("trial %d (na=%d nb=%d): HodgesLehmann = %v, want %v", trial, na, nb, float64(got), want)
		}
	}
}

// TestSelectDiffFewSamples: with few samples per round the pivots often
// land on the wrong side of the k-th or on a tie with it; every path must
// still give the exact order statistics.
func TestSelectDiffFewSamples(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := range 200 {
		na, nb := 1+rng.IntN(80), 1+rng.IntN(80)
		kind := []int{0, 1, 2}[trial%3]
		a, b := randomSample(rng, na, kind), randomSample(rng, nb, kind)
		var d []float64
		for _, x := range a {
			for _, y := range b {
				d = append(d, y-x)
			}
		}
		slices.Sort(d)
		sortFloats(a)
		sortFloats(b)
		k := rng.IntN(len(d))
		prev, kth := selectDiff(a, b, nil, k, rng, 1+trial%16)
		want := d[max(k-1, 0)]
		if kth != d[k] || prev != want {
			t.Fatalf("trial %d (na=%d nb=%d k=%d): got (%v, %v), want (%v, %v)", trial, na, nb, k, prev, kth, want, d[k])
		}
	}
}

// TestSelectDiffTriangle: on the triangle of Walsh sums (first[i] =
// n−1−i) every order statistic, with few or many samples per round and
// with ties, is the one of the sorted sums.
func TestSelectDiffTriangle(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := range 300 {
		n := 1 + rng.IntN(120)
		d := randomSample(rng, n, trial%3)
		sortFloats(d)
		var sums []float64
		for i := range n {
			for j := i; j < n; j++ {
				sums = append(sums, d[i]+d[j])
			}
		}
		slices.Sort(sums)
		a, first := make([]float64, n), make([]int, n)
		for i, x := range d {
			a[n-1-i] = -x
			first[n-1-i] = i
		}
		k := rng.IntN(len(sums))
		prev, kth := selectDiff(a, d, first, k, rng, 1+trial%16)
		if want := sums[max(k-1, 0)]; kth != sums[k] || prev != want {
			t.Fatalf("trial %d (n=%d k=%d): got (%v, %v), want (%v, %v)", trial, n, k, prev, kth, want, sums[k])
		}
	}
}

// TestWalshMedian: the selected median of the Walsh averages is the one
// of all averages built and sorted, bit for bit.
func TestWalshMedian(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for trial := range 200 {
		n := 1 + rng.IntN(400)
		d := randomSample(rng, n, trial%3)
		for i := range d {
			d[i] -= 50 // both signs, as log ratios
		}
		sortFloats(d)
		if got, want := walshMedian(d), walshMedianNaive(d); got != want {
			t.Fatalf("trial %d (n=%d): walshMedian = %v, want %v", trial, n, got, want)
		}
	}
}
