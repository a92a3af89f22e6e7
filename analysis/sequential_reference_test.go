package analysis

import (
	"math"
	"testing"
)

// TestMixtureLogBFAgainstSciPy checks the closed-form Bayes factor behind
// the anytime-valid analysis (Rouder et al. 2009, eq. 1 with fixed g)
// against its definition integrated numerically by SciPy: the mean over
// δ ~ N(0, g) of the noncentral t density of t over the central one
// (testdata/gen_sequential_reference.py). It also checks that
// mixtureCritical inverts it at 1/α.
func TestMixtureLogBFAgainstSciPy(t *testing.T) {
	var cases []struct {
		N, T, G float64
		LogBF   float64 `json:"log_bf"`
	}
	readJSON(t, "testdata/sequential_reference.json", &cases)
	if len(cases) < 30 {
		t.Fatalf("only %d reference cases", len(cases))
	}
	for _, c := range cases {
		nu := c.N - 1
		a := 1 + c.N*c.G
		got := mixtureLogBF(c.T*c.T/nu, a, math.Log(a), c.N)
		if math.Abs(got-c.LogBF) > 1e-7*math.Max(1, math.Abs(c.LogBF)) {
			t.Errorf("n=%v t=%v g=%v: log BF %.12g, scipy %.12g", c.N, c.T, c.G, got, c.LogBF)
		}
	}
	for _, n := range []float64{5, 10, 30, 100} {
		a := 1 + n
		u, ok := mixtureCritical(math.Log(20), a, math.Log(a), n)
		if !ok {
			t.Errorf("n=%v: no critical value", n)
			continue
		}
		if got := mixtureLogBF(u, a, math.Log(a), n); math.Abs(got-math.Log(20)) > 1e-9 {
			t.Errorf("n=%v: log BF at the critical value %.12g, want log 20", n, got)
		}
	}
}
