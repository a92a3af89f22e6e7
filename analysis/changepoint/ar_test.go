package changepoint

import (
	"math"
	"slices"
	"testing"
)

// TestCleanAR: an isolated outlier is replaced by its conditional mean
// given its neighbours, m + ρ/(1+ρ²)·(x₋ − m + x₊ − m) (worked by hand
// below); a run of values off the level, as a split in the wrong place
// leaves beside a step, and a series without outliers are left alone.
func TestCleanAR(t *testing.T) {
	check := func(name string, xs []float64, j int, rho float64, want []float64) {
		t.Helper()
		got := cleanAR(xs, j, rho)
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-12 {
				t.Errorf("%s: %v, want %v", name, got, want)
				return
			}
		}
	}
	base := []float64{10, 10.5, 9.5, 10.2, 9.8, 10.1, 9.9, 10.3, 9.7, 10}
	check("no outlier", base, 5, 0.5, base)
	spiked := slices.Clone(base)
	spiked[3] = 30
	// The median of the first five is 10, ρ/(1+ρ²) = 0.4 at ρ 0.5:
	// 10 + 0.4·((9.5 − 10) + (9.8 − 10)) = 9.72.
	want := slices.Clone(base)
	want[3] = 9.72
	check("isolated outlier", spiked, 5, 0.5, want)
	// ρ 0: the level of its side.
	want[3] = 10
	check("isolated outlier, ρ 0", spiked, 5, 0, want)
	// Three builds 20 up (a step's other side, or a short bump) on the
	// side before the split at 8: far from that side's level, but each
	// close to a neighbour.
	run := append(slices.Clone(base[:5]), 30.1, 29.9, 30.3, 9.7, 10, 9.8, 10.2, 9.9, 10.1)
	check("run of three", run, 8, 0.5, run)
}

// TestRhoDF: 1/(1/df + 1/ν), ν = (1−ρ²)·n/2.
func TestRhoDF(t *testing.T) {
	for _, c := range []struct {
		df, rho float64
		n       int
		want    float64
	}{
		{df: 100, rho: 0, n: 200, want: 50},                     // ν 100
		{df: 58, rho: 0.7, n: 200, want: 1 / (1.0/58 + 1/51.0)}, // ν 51
		{df: 10, rho: 1, n: 200, want: 10},                      // ν 0: no information, left alone
	} {
		if got := rhoDF(c.df, c.rho, c.n); math.Abs(got-c.want) > 1e-9*c.want {
			t.Errorf("rhoDF(%g, %g, %d) = %v, want %v", c.df, c.rho, c.n, got, c.want)
		}
	}
}
