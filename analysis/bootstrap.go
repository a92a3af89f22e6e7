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
	chunks := (resamples + bootstrapChunk - 1) / bootstrapChunk
	var next atomic.Int64
	work := func() {
		buf := make([]float64, max(len(as), len(bsorted)))
		for {
			c := int(next.Add(1) - 1)
			if c >= chunks {
				return
			}
			src := rand.NewPCG(seed, 0x9e3779b97f4a7c15^uint64(c))
			rng := rand.New(src)
			end := min(resamples, (c+1)*bootstrapChunk)
			for r := c * bootstrapChunk; r < end; r++ {
				ra := draw(as, rng, src, buf)
				rb := draw(bsorted, rng, src, buf)
				diffs[r] = rb - ra
				pcts[r] = (rb - ra) / math.Abs(ra) * 100 // ±Inf or NaN when ra is 0
			}
		}
	}
	workers := min(chunks, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()

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
	} else {
		warn = append(warn, "bootstrap interval of the relative difference undefined: some resampled medians of A are 0")
	}
	return bs, warn
}

// orderStatMedian draws the median of a size-n resample of sorted xs from
// the order-statistic distribution (see BootstrapMedianDiff).
func orderStatMedian(xs []float64, rng *rand.Rand, src rand.Source, _ []float64) float64 {
	n := len(xs)
	idx := func(u float64) int { return min(n-1, int(u*float64(n))) }
	if n%2 == 1 {
		k := float64(n+1) / 2
		u := distuv.Beta{Alpha: k, Beta: float64(n) - k + 1, Src: src}.Rand()
		return xs[idx(u)]
	}
	k := float64(n / 2)
	u1 := distuv.Beta{Alpha: k, Beta: float64(n) - k + 1, Src: src}.Rand()
	// Minimum of the n−k uniforms above u1: u1 + (1−u1)·Beta(1, n−k).
	v := 1 - rng.Float64()                                    // (0, 1]
	u2 := u1 + (1-u1)*-math.Expm1(math.Log(v)/(float64(n)-k)) // 1 − v^(1/(n−k))
	return mid(xs[idx(u1)], xs[idx(u2)])
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
