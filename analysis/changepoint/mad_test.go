package changepoint

import (
	"math"
	"testing"
)

// TestMADSigma checks the effect floor's robust σ against SciPy:
// scipy.stats.median_abs_deviation([3.1, 2.7, 9.9, 3.3, 2.95, 3.05, 2.8],
// scale="normal") = 0.3706505546264005, the median 3.05 (scipy 1.10.1).
func TestMADSigma(t *testing.T) {
	xs := []float64{3.1, 2.7, 9.9, 3.3, 2.95, 3.05, 2.8}
	m := median(xs)
	if got := madSigma(xs, m); m != 3.05 || math.Abs(got-0.3706505546264005) > 1e-4 {
		t.Errorf("median %v, MAD σ %v; SciPy: 3.05, 0.37065", m, got)
	}
}
