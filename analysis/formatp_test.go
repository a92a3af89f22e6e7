package analysis

import (
	"math"
	"regexp"
	"strconv"
	"testing"
)

// printedPs returns the numbers printed after "p=" or "p = " (and after
// "Holm over N arms: ") in a message.
func printedPs(t *testing.T, msg string) []float64 {
	t.Helper()
	var out []float64
	for _, m := range regexp.MustCompile(`(?:p ?= ?|arms: )([0-9.e+-]+)`).FindAllStringSubmatch(msg, -1) {
		x, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatalf("%q: p %q: %v", msg, m[1], err)
		}
		out = append(out, x)
	}
	if len(out) == 0 {
		t.Fatalf("no p in %q", msg)
	}
	return out
}

// TestPJustUnderAlphaPrintsUnderIt: a p just under alpha never prints at
// or above alpha's printed value, neither beside a computed alpha
// (FormatPAlpha, as the order study's 0.05/3) nor in the drift warning
// (which %.3g and %.2g did: 0.0166 < 0.05/3 printed "0.017 < 0.017").
func TestPJustUnderAlphaPrintsUnderIt(t *testing.T) {
	for _, c := range []struct{ p, alpha float64 }{
		{0.0166, 0.05 / 3},
		{0.016666, 0.05 / 3},
		{0.04996, 0.05},
		{0.049999, 0.05},
		{0.0099996, 0.01},
		{0.00714, 0.05 / 7},
		{0.0125, 0.0125000001},
	} {
		ps, as := FormatPAlpha(c.p, c.alpha, 3, 2)
		q, _ := strconv.ParseFloat(ps, 64)
		a, _ := strconv.ParseFloat(as, 64)
		if !(q < a) {
			t.Errorf("FormatPAlpha(%g, %g) = %q, %q: p prints at or above alpha", c.p, c.alpha, ps, as)
		}
		// The same p at or above alpha prints at or above it.
		ps, as = FormatPAlpha(c.alpha, c.alpha, 3, 2)
		q, _ = strconv.ParseFloat(ps, 64)
		a, _ = strconv.ParseFloat(as, 64)
		if q < a {
			t.Errorf("FormatPAlpha(alpha %g, %g) = %q, %q: p prints under alpha", c.alpha, c.alpha, ps, as)
		}

		// The drift warning at this alpha, one arm (Holm changes nothing).
		ms := []MetricResult{{Name: "m", A: Summary{N: 20, SD: 1}, Trend: Trend{A: Correlation{Rho: 0.5, P: Float(c.p)}}}}
		warnDrift(ms, c.alpha)
		if len(ms[0].Warnings) != 1 {
			t.Fatalf("p %g alpha %g: warnings %q", c.p, c.alpha, ms[0].Warnings)
		}
		for _, x := range printedPs(t, ms[0].Warnings[0]) {
			if !(x < c.alpha) || math.IsNaN(x) {
				t.Errorf("p %g alpha %g: %q prints p = %g", c.p, c.alpha, ms[0].Warnings[0], x)
			}
		}
	}
}
