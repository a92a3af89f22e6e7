package analysis

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestVerdictEstimatorConsistent is issue 16 item 4: the Δ printed beside
// a verdict is the estimate the verdict rests on, inside its interval and
// on the side of 0 the verdict says, in Table and in VersusTable, for
// both primary tests, also on data whose median, mean and Hodges–Lehmann
// shift disagree in sign (most of B a little faster, a fifth much slower).
func TestVerdictEstimatorConsistent(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 4))
	decided := map[string]int{}
	for seed := range 40 {
		n := 12 + seed%20
		a := make([]float64, n)
		b := make([]float64, n)
		for i := range a {
			a[i] = 100 + rng.NormFloat64()
			b[i] = 99.6 + 0.5*rng.NormFloat64()
			if i%5 == 0 {
				b[i] = 120 + rng.NormFloat64()
			}
		}
		for _, test := range []string{TestMannWhitney, TestWelch} {
			opt := DefaultOptions()
			opt.Test, opt.Resamples = test, 2000
			in := []MetricInput{{Name: "m", Samples: [][]float64{a, b}}}
			r := Compare(in, opt)
			m := r.Metrics[0]
			d := m.Decision
			cell := fmtPct(d.DeltaPct)
			if m.Verdict == VerdictRegression || m.Verdict == VerdictImprovement {
				decided[test]++
				if !(d.CILowPct <= d.DeltaPct && d.DeltaPct <= d.CIHighPct) {
					t.Errorf("seed %d %s: Δ %v outside its CI [%v, %v]", seed, test, d.DeltaPct, d.CILowPct, d.CIHighPct)
				}
				if (m.Verdict == VerdictRegression) != (d.DeltaPct > 0) {
					t.Errorf("seed %d %s: %s beside Δ %s", seed, test, m.Verdict, cell)
				}
			}
			row := ""
			for _, l := range strings.Split(Table(r), "\n") {
				if strings.HasPrefix(l, "m ") {
					row = l
				}
			}
			if m.Verdict != VerdictNoChange && !strings.Contains(row, " "+cell+" ") {
				t.Errorf("seed %d %s: table row %q lacks the decision's Δ %s", seed, test, row, cell)
			}
			v := CompareVersus([]MetricInput{{Name: "m", Samples: [][]float64{a, b, b}}}, opt)
			vm := v.Comparisons[0].Metrics[0]
			if vm.Verdict != VerdictNoChange && !strings.Contains(VersusTable(v), fmtPct(vm.Decision.DeltaPct)+" (p") {
				t.Errorf("seed %d %s: versus table lacks the decision's Δ %s:\n%s", seed, test, fmtPct(vm.Decision.DeltaPct), VersusTable(v))
			}
		}
	}
	t.Logf("decided: %v", decided)
	if decided[TestWelch] == 0 {
		t.Error("no Welch verdict decided: the data do not exercise the check")
	}
}
