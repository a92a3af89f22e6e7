package analysis

import (
	"math"
	"testing"
)

// Reference values from Debian's python3-scipy 1.10.1:
//
//	stats.binomtest(k, n).proportion_ci(0.95, 'exact')
//	stats.binom.interval(0.95, n, p)
//	r = max r with 1 - 2*stats.binom.cdf(r-1, n, 0.5) >= 0.95 (median CI [x(r), x(n-r+1)])

func TestBinomialCI(t *testing.T) {
	check := func(k, n int, lo, hi float64) {
		t.Helper()
		p, w := BinomialCI(k, n, 0.95)
		if len(w) > 0 {
			t.Fatalf("%d/%d: warnings %v", k, n, w)
		}
		if math.Abs(float64(p.CILow)-lo) > 1e-9 || math.Abs(float64(p.CIHigh)-hi) > 1e-9 {
			t.Errorf("%d/%d: CI [%v, %v], scipy [%v, %v]", k, n, p.CILow, p.CIHigh, lo, hi)
		}
		if float64(p.Rate) != float64(k)/float64(n) {
			t.Errorf("%d/%d: rate %v", k, n, p.Rate)
		}
	}
	check(0, 200, 0, 0.018275340355148807)
	check(10, 200, 0.02423416547210829, 0.09002753770155869)
	check(17, 200, 0.050295918630241764, 0.1326051658295526)
	check(200, 200, 0.9817246596448512, 1)
	check(3, 7, 0.09898827844243689, 0.81594843235993)
	check(50, 100, 0.3983211295033011, 0.6016788704966989)

	p, _ := BinomialCI(17, 200, 0.95)
	if p.Excludes(0.06) || !p.Excludes(0.05) || !p.Excludes(0.2) {
		t.Errorf("Excludes wrong for %+v", p)
	}
	for _, bad := range [][2]int{{0, 0}, {3, 2}, {-1, 5}} {
		p, w := BinomialCI(bad[0], bad[1], 0.95)
		if len(w) == 0 || p.Rate.Defined() || p.CILow.Defined() {
			t.Errorf("%v: want undefined with a warning, got %+v %v", bad, p, w)
		}
	}
}

func TestBinomialRange(t *testing.T) {
	for _, tc := range []struct {
		n      int
		p      float64
		lo, hi int
	}{{200, 0.05, 4, 16}, {100, 0.8, 72, 88}, {1000, 0.05, 37, 64}, {10, 0.5, 2, 8}} {
		lo, hi := BinomialRange(tc.n, tc.p, 0.95)
		if lo != tc.lo || hi != tc.hi {
			t.Errorf("BinomialRange(%d, %v) = [%d, %d], scipy [%d, %d]", tc.n, tc.p, lo, hi, tc.lo, tc.hi)
		}
	}
}

func TestMedianCI(t *testing.T) {
	seq := func(n int) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(n - i) // descending: the function must sort
		}
		return xs
	}
	for _, tc := range []struct {
		n   int
		r   int // 0: undefined
		cov float64
	}{{5, 0, 0}, {6, 1, 0.96875}, {10, 2, 0.978515625}, {20, 6, 0.9586105346679688}, {50, 18, 0.9671608624357315}, {101, 41, 0.9539559330706572}} {
		iv, w := MedianCI(seq(tc.n), 0.95)
		if tc.r == 0 {
			if iv.Low.Defined() || len(w) == 0 {
				t.Errorf("n=%d: want undefined interval with a warning, got %+v", tc.n, iv)
			}
			continue
		}
		if float64(iv.Low) != float64(tc.r) || float64(iv.High) != float64(tc.n-tc.r+1) {
			t.Errorf("n=%d: [%v, %v], want [x(%d), x(%d)]", tc.n, iv.Low, iv.High, tc.r, tc.n-tc.r+1)
		}
		if math.Abs(float64(iv.Coverage)-tc.cov) > 1e-12 {
			t.Errorf("n=%d: coverage %v, scipy %v", tc.n, iv.Coverage, tc.cov)
		}
		if float64(iv.Point) != float64(tc.n+1)/2 {
			t.Errorf("n=%d: median %v", tc.n, iv.Point)
		}
	}
}
