package analysis

import (
	"math"
	"strings"
	"testing"
)

// TestAcross checks the per-test options of m tests asked together
// (Bonferroni–Dunn) and that the one decision function applies them: a
// 2% shift in 10 pairs is a regression alone, inconclusive among 30 (the
// signed-rank floor 2/2¹⁰ is above 0.05/30), and a regression again
// among 30 with 14 pairs, whose interval is then the wider simultaneous
// one.
func TestAcross(t *testing.T) {
	o := DefaultOptions()
	if got := o.Across(1); got.Alpha != o.Alpha || got.Confidence != o.Confidence {
		t.Errorf("Across(1) = %g, %g", got.Alpha, got.Confidence)
	}
	a30 := o.Across(30)
	if math.Abs(a30.Alpha-0.05/30) > 1e-15 || math.Abs(a30.Confidence-(1-0.05/30)) > 1e-15 {
		t.Errorf("Across(30) = %g, %g", a30.Alpha, a30.Confidence)
	}
	shifted := func(n int) []MetricInput {
		var in MetricInput
		in.Name = "ms"
		in.Samples = [][]float64{nil, nil}
		for i := range n {
			x := 100 * (1 + 0.004*math.Sin(float64(i)*2.1))
			y := x * 1.02 * (1 + 0.001*math.Cos(float64(i)*1.3))
			in.Samples[0], in.Samples[1] = append(in.Samples[0], x), append(in.Samples[1], y)
			in.Pairs = append(in.Pairs, Pair{x, y})
		}
		return []MetricInput{in}
	}
	check := func(name string, n int, opt Options, want string) MetricResult {
		t.Helper()
		m := Compare(shifted(n), opt).Metrics[0]
		if m.Verdict != want {
			t.Errorf("%s: verdict %s, want %s (%v)", name, m.Verdict, want, m.Warnings)
		}
		return m
	}
	check("alone, 10 pairs", 10, o, VerdictRegression)
	m := check("among 30, 10 pairs", 10, a30, VerdictInconclusive)
	if !strings.Contains(strings.Join(m.Warnings, "\n"), "smallest possible signed-rank p") {
		t.Errorf("among 30, 10 pairs: no floor warning in %v", m.Warnings)
	}
	alone := check("alone, 14 pairs", 14, o, VerdictRegression)
	among := check("among 30, 14 pairs", 14, a30, VerdictRegression)
	if !(among.Decision.CILowPct < alone.Decision.CILowPct && among.Decision.CIHighPct > alone.Decision.CIHighPct) {
		t.Errorf("simultaneous interval [%v, %v] not wider than [%v, %v]", among.Decision.CILowPct, among.Decision.CIHighPct,
			alone.Decision.CILowPct, alone.Decision.CIHighPct)
	}
}

// TestSignedRankMinPairs checks the fewest pairs against the floor
// 2/2ⁿ, which scipy.stats.wilcoxon(range(1, n+1)).pvalue gives exactly
// (n = 5: 0.0625, 6: 0.03125, 10: 0.001953125, 11: 0.0009765625).
func TestSignedRankMinPairs(t *testing.T) {
	for _, c := range []struct {
		alpha float64
		want  int
	}{{0.05, 6}, {0.0625, 6}, {0.0626, 5}, {0.05 / 30, 11}, {0.002, 10}, {1, 2}, {0, 0}} {
		if got := SignedRankMinPairs(c.alpha); got != c.want {
			t.Errorf("SignedRankMinPairs(%g) = %d, want %d", c.alpha, got, c.want)
		}
	}
}
