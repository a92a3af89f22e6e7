package analysis

import "math"

// Summary describes one sample.
type Summary struct {
	N      int   `json:"n"`
	Mean   Float `json:"mean"`
	Median Float `json:"median"`
	SD     Float `json:"sd"` // sample standard deviation (n−1 denominator)
	CV     Float `json:"cv"` // SD/|Mean| as a fraction; undefined when the mean is 0
	Min    Float `json:"min"`
	Max    Float `json:"max"`
}

// Summarize returns n, mean, median, standard deviation (n−1), coefficient
// of variation, min and max of xs. Statistics that need more values than xs
// holds (the mean of nothing, the SD of one value) are undefined. Values
// of any finite magnitude are handled without overflow.
func Summarize(xs []float64) Summary {
	return summarizeSorted(sortedCopy(xs))
}

// summarizeSorted is Summarize of sorted values.
func summarizeSorted(xs []float64) Summary {
	s := Summary{N: len(xs), Mean: undefined(), Median: undefined(), SD: undefined(),
		CV: undefined(), Min: undefined(), Max: undefined()}
	if len(xs) == 0 {
		return s
	}
	// Dividing by a power of two keeps the order, so the scaled values
	// are sorted too.
	scale := scaleOf(xs)
	n := len(xs)
	mean, sd := meanSDScaled(xs, scale)
	median := xs[n/2] / scale
	if n%2 == 0 {
		median = mid(xs[n/2-1]/scale, median)
	}
	s.Mean = defined(mean * scale)
	s.Median = defined(median * scale)
	s.Min = defined(xs[0] / scale * scale)
	s.Max = defined(xs[n-1] / scale * scale)
	if len(xs) >= 2 {
		s.SD = defined(sd * scale)
		if mean != 0 {
			s.CV = defined(sd / math.Abs(mean))
		}
	}
	return s
}

// scaleOf returns a power of two close to the largest magnitude in the
// given samples, so that dividing by it (exactly) keeps sums and squares of
// the values far from overflow and underflow. It returns 1 when all values
// are zero.
func scaleOf(samples ...[]float64) float64 {
	maxAbs := 0.0
	for _, xs := range samples {
		for _, x := range xs {
			if a := math.Abs(x); a > maxAbs {
				maxAbs = a
			}
		}
	}
	if maxAbs == 0 || math.IsInf(maxAbs, 0) || math.IsNaN(maxAbs) {
		return 1
	}
	_, exp := math.Frexp(maxAbs)
	return math.Ldexp(1, exp-1) // maxAbs/scale is in [1, 2)
}

// meanSD returns the mean and the n−1 standard deviation of xs (NaN when
// undefined), using two passes for accuracy.
func meanSD(xs []float64) (mean, sd float64) { return meanSDScaled(xs, 1) }

// meanSDScaled is meanSD of the values x/scale for x in xs.
func meanSDScaled(xs []float64, scale float64) (mean, sd float64) {
	n := len(xs)
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	sum := 0.0
	for _, x := range xs {
		sum += x / scale
	}
	mean = sum / float64(n)
	if n < 2 {
		return mean, math.NaN()
	}
	ss, comp := 0.0, 0.0
	for _, x := range xs {
		d := x/scale - mean
		ss += d * d
		comp += d
	}
	// Corrected two-pass formula (Chan, Golub, LeVeque).
	v := (ss - comp*comp/float64(n)) / float64(n-1)
	if v < 0 {
		v = 0
	}
	return mean, math.Sqrt(v)
}

// medianSorted returns the median of sorted xs.
func medianSorted(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return xs[n/2]
	}
	return mid(xs[n/2-1], xs[n/2])
}
