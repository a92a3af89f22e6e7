package analysis

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// readJSON decodes the reference file at path into v.
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestStudentTTailQuantileAgainstSciPy checks studentTTailQuantile, the t
// critical value of each group-sequential look, against
// testdata/tquantile_reference.json (scipy.stats.t.isf refined by Newton
// steps on t.logsf, checked against closed forms for 1 and 2 degrees
// of freedom and a Cornish–Fisher expansion for large degrees
// of freedom; gen_tquantile_reference.py) to 1e-12 relative, from the
// body (q = 0.975) to the far tail (q = 1e-99) and from 1 to 10⁷ degrees
// of freedom (the looks' ν = k − 1 ≤ 999; Welch's ν for samples up to
// millions), on both sides of the switch to the Cornish–Fisher expansion
// past 10⁵ (at 10⁶–10⁷ the incomplete beta alone held only ~4e-11).
func TestStudentTTailQuantileAgainstSciPy(t *testing.T) {
	var cases []struct {
		Q, DF, X float64
	}
	readJSON(t, "testdata/tquantile_reference.json", &cases)
	if len(cases) < 200 {
		t.Fatalf("only %d reference cases", len(cases))
	}
	worst := 0.0
	check := func(q, df, want float64) {
		t.Helper()
		got := studentTTailQuantile(q, df)
		err := math.Abs(got - want)
		if want != 0 {
			err /= math.Abs(want)
		}
		worst = math.Max(worst, err)
		if !(err <= 1e-12) {
			t.Errorf("q %g, df %g: %.17g, scipy %.17g (%.2g relative)", q, df, got, want, err)
		}
	}
	for _, c := range cases {
		check(c.Q, c.DF, c.X)
	}
	t.Logf("worst relative error %.2g", worst)
	for _, q := range []float64{0, -1, 1e-101} {
		if x := studentTTailQuantile(q, 5); !math.IsInf(x, 1) {
			t.Errorf("q %g: %g, want +Inf", q, x)
		}
	}
}
