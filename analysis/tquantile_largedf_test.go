package analysis

import (
	"math"
	"testing"
)

// Past 10⁵ df the t quantile is the Cornish–Fisher expansion; it agrees
// with scipy.stats.t.isf (testdata/gen_tquantile_largedf.py) to 1e-13
// relative, where the incomplete beta's Newton steps were 2% off at 10¹⁶
// df and gave 52.68 for 1.96 at 10²⁰. df ≤ 0 or NaN gives NaN, not a panic.
func TestStudentTQuantileLargeDF(t *testing.T) {
	for _, c := range []struct{ df, q, want float64 }{
		{100000000.0, 0.025, 1.9599640082627667},
		{100000000.0, 1e-06, 4.753424589216036},
		{100000000.0, 1e-30, 11.464028483720732},
		{100000000.0, 1e-99, 21.165203100013347},
		{10000000000.0, 0.025, 1.9599639847772814},
		{10000000000.0, 1e-06, 4.75342431162683},
		{10000000000.0, 1e-30, 11.464024726396376},
		{10000000000.0, 1e-99, 21.165179581499434},
		{1000000000000.0, 0.025, 1.9599639845424266},
		{1000000000000.0, 1e-06, 4.753424308850938},
		{1000000000000.0, 1e-30, 11.464024688823143},
		{1000000000000.0, 1e-99, 21.165179346314513},
		{1e+16, 0.025, 1.9599639845400545},
		{1e+16, 1e-06, 4.753424308822901},
		{1e+16, 1e-30, 11.464024688443653},
		{1e+16, 1e-99, 21.165179343939148},
		{1e+20, 0.025, 1.9599639845400543},
		{1e+20, 1e-06, 4.753424308822899},
		{1e+20, 1e-30, 11.464024688443615},
		{1e+20, 1e-99, 21.16517934393891},
	} {
		got := studentTQuantile(1-c.q, c.df)
		if c.q <= 1e-6 {
			got = studentTUpperQuantile(c.q, c.df) // 1 − q would round q
		}
		if rel := math.Abs(got-c.want) / c.want; !(rel <= 1e-13) {
			t.Errorf("df %g, upper q %g: %.17g, scipy %.17g (rel %.1e)", c.df, c.q, got, c.want, rel)
		}
		if low := studentTQuantile(c.q, c.df); c.q > 1e-6 && math.Abs(low+c.want)/c.want > 1e-13 {
			t.Errorf("df %g, lower q %g: %.17g, want %.17g", c.df, c.q, low, -c.want)
		}
	}
	for _, df := range []float64{0, -1, math.NaN()} {
		if got := studentTQuantile(0.975, df); !math.IsNaN(got) {
			t.Errorf("df %g: %g, want NaN", df, got)
		}
		if got := studentTUpperQuantile(0.025, df); !math.IsNaN(got) {
			t.Errorf("upper, df %g: %g, want NaN", df, got)
		}
	}
}
