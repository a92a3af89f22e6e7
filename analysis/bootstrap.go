package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/stat/distuv"
)

// Bootstrap is a percentile bootstrap confidence interval of
// median(B) − median(A), resampling each arm independently.
type Bootstrap struct {
	Point     Float `json:"point"` // observed median(B) − median(A)
	Low       Float `json:"low"`
	High      Float `json:"high"`
	SE        Float `json:"se"` // standard deviation of the bootstrap replicates
	Resamples int   `json:"resamples"`
	// PctLow and PctHigh bound the relative difference of medians,
	// (median(B) − median(A)) / |median(A)| · 100, from the same replicates.
	PctLow  Float `json:"pct_low"`
	PctHigh Float `json:"pct_high"`

	pcts []float64 // the replicates of the relative difference, for another level (familyLevels)
}

// DefaultResamples is the number of bootstrap resamples unless told otherwise.
const DefaultResamples = 10000

// bootstrapChunk is the number of replicates drawn from one random stream.
// Chunks get seeds derived from the seed and their index, so the result is
// the same however many goroutines share the work.
const bootstrapChunk = 2048

// BootstrapMedianDiff returns the percentile bootstrap confidence interval
// and standard error of median(b) − median(a), drawing the given number of
// resamples from a PCG stream seeded with seed.
//
// Each replicate's median is drawn directly from its exact sampling
// distribution instead of building and partially sorting a resample: the
// k-th smallest of n draws (with replacement) from sorted x is
// x[⌊U₍ₖ₎·n⌋], where U₍ₖ₎, the k-th order statistic of n uniforms, is
// Beta(k, n−k+1); for even n the next order statistic is
// U₍ₖ₎ + (1−U₍ₖ₎)·Beta(1, n−k). The replicates therefore have exactly the
// distribution of classic resampling (BootstrapMedianDiffResampling), at
// O(1) cost each instead of O(n). Chunks of replicates run in parallel.
func BootstrapMedianDiff(a, b []float64, confidence float64, resamples int, seed uint64) (Bootstrap, []string) {
	return bootstrap(a, b, confidence, resamples, seed, orderStatMedian)
}

// BootstrapMedianDiffResampling is BootstrapMedianDiff by classic
// resampling: each replicate draws n values with replacement per arm and
// takes their median by quickselect. It is kept as the reference the fast
// method is tested against and for benchmarks.
func BootstrapMedianDiffResampling(a, b []float64, confidence float64, resamples int, seed uint64) (Bootstrap, []string) {
	return bootstrap(a, b, confidence, resamples, seed, resampledMedian)
}

// medianSampler draws one bootstrap replicate of the median of sorted xs.
type medianSampler func(xs []float64, rng *rand.Rand, src rand.Source, buf []float64) float64

func bootstrap(a, b []float64, confidence float64, resamples int, seed uint64, draw medianSampler) (Bootstrap, []string) {
	bs := Bootstrap{Point: undefined(), Low: undefined(), High: undefined(), SE: undefined(),
		Resamples: resamples, PctLow: undefined(), PctHigh: undefined()}
	if len(a) < 2 || len(b) < 2 {
		return bs, []string{"bootstrap needs at least 2 values per sample"}
	}
	if resamples < 2 {
		return bs, []string{fmt.Sprintf("bootstrap needs at least 2 resamples, asked for %d", resamples)}
	}
	scale := scaleOf(a, b)
	as, bsorted := scaled(a, scale), scaled(b, scale)
	sortFloats(as)
	sortFloats(bsorted)
	return bootstrapScaled(as, bsorted, scale, confidence, resamples, seed, draw)
}

// bootstrapScaled is bootstrap of as·scale and bsorted·scale, as and
// bsorted sorted, with at least 2 values each and at least 2 resamples.
func bootstrapScaled(as, bsorted []float64, scale, confidence float64, resamples int, seed uint64, draw medianSampler) (Bootstrap, []string) {
	bs := Bootstrap{Point: undefined(), Low: undefined(), High: undefined(), SE: undefined(),
		Resamples: resamples, PctLow: undefined(), PctHigh: undefined()}
	ma, mb := medianSorted(as), medianSorted(bsorted)
	bs.Point = defined((mb - ma) * scale)

	diffs := make([]float64, resamples)
	pcts := make([]float64, resamples)
	eachChunk(resamples, seed, max(len(as), len(bsorted)), func(rng *rand.Rand, src rand.Source, buf []float64, from, to int) bool {
		for r := from; r < to; r++ {
			ra := draw(as, rng, src, buf)
			rb := draw(bsorted, rng, src, buf)
			diffs[r] = rb - ra
			pcts[r] = (rb - ra) / math.Abs(ra) * 100 // ±Inf or NaN when ra is 0
		}
		return false
	})

	_, sd := meanSD(diffs)
	bs.SE = defined(sd * scale)
	lowP, highP := (1-confidence)/2, 1-(1-confidence)/2
	bs.Low = defined(quantileSelect(diffs, lowP) * scale)
	bs.High = defined(quantileSelect(diffs, highP) * scale)
	var warn []string
	pctOK := true
	for _, p := range pcts {
		if math.IsNaN(p) || math.IsInf(p, 0) {
			pctOK = false
			break
		}
	}
	if pctOK {
		bs.PctLow = defined(quantileSelect(pcts, lowP))
		bs.PctHigh = defined(quantileSelect(pcts, highP))
		bs.pcts = pcts
	} else {
		warn = append(warn, warnPctUndefined)
	}
	return bs, warn
}

// eachChunk runs work over the replicates 0 … resamples−1 in chunks of
// bootstrapChunk, in parallel: each chunk [from, to) with its own random
// stream, seeded from seed and the chunk's index (so results do not depend
// on the number of workers), and a buffer of bufLen values per worker. No
// chunk is started once a call of work returns true.
func eachChunk(resamples int, seed uint64, bufLen int, work func(rng *rand.Rand, src rand.Source, buf []float64, from, to int) (stop bool)) {
	chunks := (resamples + bootstrapChunk - 1) / bootstrapChunk
	var next atomic.Int64
	var stopped atomic.Bool
	worker := func() {
		buf := make([]float64, bufLen)
		for !stopped.Load() {
			c := int(next.Add(1) - 1)
			if c >= chunks {
				return
			}
			src := rand.NewPCG(seed, 0x9e3779b97f4a7c15^uint64(c))
			if work(rand.New(src), src, buf, c*bootstrapChunk, min(resamples, (c+1)*bootstrapChunk)) {
				stopped.Store(true)
			}
		}
	}
	workers := min(chunks, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(worker)
	}
	worker()
	wg.Wait()
}

// warnPctUndefined is bootstrapScaled's warning when some replicate's
// relative difference is not finite.
const warnPctUndefined = "bootstrap interval of the relative difference undefined: some resampled medians of A are 0"

// bootstrapScaledWarnings returns the warnings bootstrapScaled(as, bsorted,
// scale, confidence, resamples, seed, orderStatMedian) gives, without its
// interval (Options.SkipUnpairedEstimates). The only data-dependent
// warning is warnPctUndefined, given when some replicate's relative
// difference (rb − ra)/|ra| is not finite. pctAlwaysFinite rules that out
// from the values alone when A keeps away from 0 (timings mostly do).
// Otherwise the same replicates are drawn from the same streams, and the
// draws stop at the first one that is not finite; when A is not negative
// (CPU times with some 0 ms), zeroMedianBound lets a replicate be judged by
// whether its median of A is 0, skipping the rest of each draw's work.
func bootstrapScaledWarnings(as, bsorted []float64, resamples int, seed uint64) []string {
	if pctAlwaysFinite(as, bsorted) {
		return nil
	}
	// notFinite draws one replicate as bootstrapScaled does and reports
	// whether its relative difference is not finite.
	notFinite := func(rng *rand.Rand, src rand.Source, buf []float64) bool {
		ra := orderStatMedian(as, rng, src, buf)
		rb := orderStatMedian(bsorted, rng, src, buf)
		p := (rb - ra) / math.Abs(ra) * 100
		return math.IsNaN(p) || math.IsInf(p, 0)
	}
	if z, ok := zeroMedianBound(as, bsorted); ok {
		if z == len(as) {
			return []string{warnPctUndefined} // every median of A is 0
		}
		notFinite = func(rng *rand.Rand, src rand.Source, _ []float64) bool {
			zero := orderStatBelow(len(as), z, rng, src)
			orderStatBelow(len(bsorted), 0, rng, src) // B's draw, for the stream
			return zero
		}
	}
	var found atomic.Bool
	eachChunk(resamples, seed, max(len(as), len(bsorted)), func(rng *rand.Rand, src rand.Source, buf []float64, from, to int) bool {
		for r := from; r < to && !found.Load(); r++ {
			if notFinite(rng, src, buf) {
				found.Store(true)
			}
		}
		return found.Load()
	})
	if found.Load() {
		return []string{warnPctUndefined}
	}
	return nil
}

// zeroMedianBound reports, for sorted as of values ≥ 0 and sorted bsorted,
// all finite, the number z of zeros in as, and ok when a replicate's
// relative difference is not finite exactly when its median of A is 0:
// any other median of A is at least half the smallest positive value p
// (the midpoint of 0 and p at least), and with p/2 ≥ 1e-300 and
// (max A + max|B|)/(p/2)·100 < 1e300 the ratio is finite.
func zeroMedianBound(as, bsorted []float64) (z int, ok bool) {
	if len(as) == 0 || len(bsorted) == 0 || !(as[0] >= 0) {
		return 0, false
	}
	for _, xs := range [][]float64{as, bsorted} {
		for _, x := range xs {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return 0, false
			}
		}
	}
	for z < len(as) && as[z] == 0 {
		z++
	}
	if z == len(as) {
		return z, true
	}
	const lo = 1e-300
	half := as[z] / 2
	maxB := math.Max(math.Abs(bsorted[0]), math.Abs(bsorted[len(bsorted)-1]))
	return z, half >= lo && (as[len(as)-1]+maxB)/half*100 < 1e300
}

// orderStatBelow draws what orderStatMedian draws for a sorted sample of
// n values, from the same stream (orderStatIndices), and reports whether
// the resampled median is made of the first z values only: its larger
// index is below z.
func orderStatBelow(n, z int, rng *rand.Rand, src rand.Source) bool {
	_, i2 := orderStatIndices(n, rng, src)
	return i2 < z
}

// pctAlwaysFinite reports whether every replicate's (rb − ra)/|ra|·100 is
// finite whatever is drawn, ra a resampled median of sorted as and rb one
// of sorted bsorted: all values are finite, A's are all of one sign and at
// least lo = 1e-300 in magnitude, so that |ra| ≥ lo (a median of such
// values, or the midpoint of two, is one of them or lies between them),
// and (max|A| + max|B|)/lo·100 stays below 1e300, bounding |rb − ra|/|ra|.
func pctAlwaysFinite(as, bsorted []float64) bool {
	if len(as) == 0 || len(bsorted) == 0 {
		return false
	}
	const lo = 1e-300
	for _, xs := range [][]float64{as, bsorted} {
		for _, x := range xs {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return false
			}
		}
	}
	a0, a1 := as[0], as[len(as)-1]
	b0, b1 := bsorted[0], bsorted[len(bsorted)-1]
	minA := math.Min(math.Abs(a0), math.Abs(a1))
	if !(a0 >= lo || a1 <= -lo) || minA < lo {
		return false
	}
	maxA := math.Max(math.Abs(a0), math.Abs(a1))
	maxB := math.Max(math.Abs(b0), math.Abs(b1))
	return (maxA+maxB)/minA*100 < 1e300
}

// orderStatMedian draws the median of a size-n resample of sorted xs from
// the order-statistic distribution (see BootstrapMedianDiff).
func orderStatMedian(xs []float64, rng *rand.Rand, src rand.Source, _ []float64) float64 {
	i1, i2 := orderStatIndices(len(xs), rng, src)
	if i1 == i2 {
		return xs[i1]
	}
	return mid(xs[i1], xs[i2])
}

// orderStatIndices draws the indices, in a sorted sample of n values, of
// the order statistics whose midpoint is the median of a size-n resample
// (the same index twice for odd n), i1 ≤ i2: the k-th smallest of n
// uniforms is Beta(k, n−k+1) (the order-statistic distribution), mapped
// through the empirical quantile function.
func orderStatIndices(n int, rng *rand.Rand, src rand.Source) (i1, i2 int) {
	idx := func(u float64) int { return min(n-1, int(u*float64(n))) }
	if n%2 == 1 {
		k := float64(n+1) / 2
		u := distuv.Beta{Alpha: k, Beta: float64(n) - k + 1, Src: src}.Rand()
		return idx(u), idx(u)
	}
	k := float64(n / 2)
	u1 := distuv.Beta{Alpha: k, Beta: float64(n) - k + 1, Src: src}.Rand()
	// Minimum of the n−k uniforms above u1: u1 + (1−u1)·Beta(1, n−k).
	v := 1 - rng.Float64()                                    // (0, 1]
	u2 := u1 + (1-u1)*-math.Expm1(math.Log(v)/(float64(n)-k)) // 1 − v^(1/(n−k))
	return idx(u1), idx(u2)
}

// resampledMedian draws n values of xs with replacement and returns their
// median by quickselect.
func resampledMedian(xs []float64, rng *rand.Rand, _ rand.Source, buf []float64) float64 {
	n := len(xs)
	buf = buf[:n]
	for i := range buf {
		buf[i] = xs[rng.IntN(n)]
	}
	return medianInPlace(buf)
}

// quantileSelect returns the p-quantile of xs by linear interpolation
// between order statistics (Hyndman–Fan type 7, numpy.percentile's and
// R's default), by selection instead of sorting; it reorders xs.
func quantileSelect(xs []float64, p float64) float64 {
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	i, f := quantileIndex(n, p)
	if i >= n-1 {
		return selectK(xs, n-1)
	}
	lo := selectK(xs, i)
	hi := xs[i+1]
	for _, x := range xs[i+2:] {
		if x < hi {
			hi = x
		}
	}
	return lo + f*(hi-lo)
}
