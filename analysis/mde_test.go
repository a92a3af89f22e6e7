package analysis

import (
	"math"
	"testing"
)

// MinDetectableEffect is the same number Compare reports as mde_pct, and
// it shrinks as samples grow (∝ 1/√n for the same spread).
func TestMinDetectableEffect(t *testing.T) {
	mk := func(n int, base float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = base + float64(i%7) - 3
		}
		return xs
	}
	check := func(a, b []float64) float64 {
		t.Helper()
		got := MinDetectableEffect(a, b, 0.05, 0.8)
		r := Compare([]MetricInput{{Name: "m", Samples: [][]float64{a, b}}}, DefaultOptions())
		want := r.Metrics[0].MDEPct
		if got.Defined() != want.Defined() || (got.Defined() && got.Or(0) != want.Or(0)) {
			t.Fatalf("MinDetectableEffect %v, Compare mde_pct %v", got, want)
		}
		return got.Or(math.NaN())
	}
	small := check(mk(14, 100), mk(14, 101))
	large := check(mk(56, 100), mk(56, 101))
	if !(large < small*0.6 && large > small*0.4) {
		t.Errorf("MDE at 4× n = %.4f%%, want about half of %.4f%%", large, small)
	}
	if check([]float64{1}, []float64{1, 2}); MinDetectableEffect([]float64{1}, []float64{1, 2}, 0.05, 0.8).Defined() {
		t.Error("MDE defined with one value in A")
	}
	if MinDetectableEffect([]float64{5, 5, 5}, []float64{5, 5, 5}, 0.05, 0.8).Defined() {
		t.Error("MDE defined with zero variance")
	}
}
