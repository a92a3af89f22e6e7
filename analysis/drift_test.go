package analysis

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/perflab/perflab/internal/calibration"
)

// TestDriftWarningAARate: in seeded A/A runs of independent, identically
// distributed trials the drift warning (any metric, any arm) must come at
// about α, within the 95% binomial range around 5%, with 1 metric and
// with 3. Uncorrected, the per-arm warnings came in 10.2% and 28.7% of
// runs. The test runs 300 (seeded; the range ends at 23, the uncorrected
// rates give about 31 and 86); the 1,000 run with bench/calibration.sh.
func TestDriftWarningAARate(t *testing.T) {
	const n = 20
	runs := calibration.Size(300, 1000)
	opt := DefaultOptions()
	opt.Resamples = 100
	_, hi := BinomialRange(runs, opt.Alpha, 0.95)
	for _, metrics := range []int{1, 3} {
		rng := rand.New(rand.NewPCG(16, uint64(metrics)))
		warned := 0
		for range runs {
			var in []MetricInput
			for k := range metrics {
				a, b := make([]float64, n), make([]float64, n)
				for i := range a {
					a[i], b[i] = 100+rng.NormFloat64(), 100+rng.NormFloat64()
				}
				in = append(in, MetricInput{Name: fmt.Sprintf("m%d", k), Samples: [][]float64{a, b}})
			}
			r := Compare(in, opt)
			drift := false
			for _, m := range r.Metrics {
				for _, w := range m.Warnings {
					drift = drift || strings.Contains(w, "may drift with trial order")
				}
			}
			if drift {
				warned++
			}
		}
		t.Logf("%d metric(s): drift warning in %d of %d A/A runs (accept ≤ %d)", metrics, warned, runs, hi)
		if warned > hi {
			t.Errorf("%d metric(s): drift warning in %d of %d iid A/A runs, above the 95%% binomial range (≤ %d) at α = 5%%", metrics, warned, runs, hi)
		}
	}
}
