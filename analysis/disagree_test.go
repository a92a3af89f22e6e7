package analysis

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestTestsDisagree is issue 16 item 3: B has the same middle as A but 15%
// of its values are outliers, so Welch's test sees the means apart while
// the Mann–Whitney test does not. The report must say so (warning and
// JSON field), with Welch's p, and what it means; and the reverse case
// (a shift of the middle hidden from the means by a long tail) likewise.
func TestTestsDisagree(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 3))
	a := make([]float64, 60)
	b := make([]float64, 60)
	for i := range a {
		a[i] = 100 + rng.NormFloat64()
		b[i] = 99.7 + rng.NormFloat64() // the middle a little lower
		if i%7 == 0 {                   // about 15% outliers
			b[i] *= 2
		}
	}
	check := func(name string, a, b []float64, want string) {
		t.Helper()
		r := Compare([]MetricInput{{Name: name, Samples: [][]float64{a, b}}}, DefaultOptions())
		m := r.Metrics[0]
		wsig := float64(m.Welch.P) < 0.05
		msig := float64(m.MannWhitney.P) < 0.05
		if wsig == msig {
			t.Fatalf("%s: the data do not make the tests disagree (Welch p %v, MWU p %v)", name, float64(m.Welch.P), float64(m.MannWhitney.P))
		}
		if !strings.Contains(m.TestDisagreement, want) || !strings.Contains(m.TestDisagreement, "Welch p=") {
			t.Errorf("%s: test_disagreement = %q, want it to mention %q and Welch's p", name, m.TestDisagreement, want)
		}
		found := false
		for _, w := range m.Warnings {
			found = found || w == m.TestDisagreement
		}
		if !found || m.TestDisagreement == "" {
			t.Errorf("%s: not among the warnings: %q", name, m.Warnings)
		}
		js, _ := json.Marshal(m)
		if !strings.Contains(string(js), `"test_disagreement":"the tests disagree`) {
			t.Errorf("%s: JSON lacks test_disagreement", name)
		}
		if !strings.Contains(Table(r), "the tests disagree (Welch p=") {
			t.Errorf("%s: table lacks the warning:\n%s", name, Table(r))
		}
	}
	check("outliers", a, b, "the change is in the tail")

	// The middle moves by 1% while one arm's long tail inflates its
	// variance: ranks apart, means not.
	c := make([]float64, 60)
	d := make([]float64, 60)
	for i := range c {
		c[i] = 100 + 0.3*rng.NormFloat64()
		d[i] = 101 + 0.3*rng.NormFloat64()
		if i%10 == 0 {
			c[i] += 40 * rng.Float64()
		}
	}
	check("hidden shift", c, d, "the middle of the distribution moved")

	// Agreement: no note.
	r := Compare([]MetricInput{{Name: "agree", Samples: [][]float64{a, a}}}, DefaultOptions())
	if r.Metrics[0].TestDisagreement != "" {
		t.Errorf("identical samples: %q", r.Metrics[0].TestDisagreement)
	}
}
