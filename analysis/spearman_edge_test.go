package analysis

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// TestSpearmanEdgeScipy checks Spearman's trend at and near |ρ| = 1
// against scipy.stats.spearmanr (testdata/spearman_edge.json, written by
// testdata/gen_spearman_edge.py; issue 25 item 6): ρ to the bit, so that
// it is ±1 exactly where SciPy's is (p = 0) and 1 − 2⁻⁵³ where SciPy's is
// (a tiny positive p, 1.4e-24 at n = 5), and p to 1e-12 relative.
func TestSpearmanEdgeScipy(t *testing.T) {
	data, err := os.ReadFile("testdata/spearman_edge.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []struct {
			Name     string
			Values   []float64
			Rho, P   float64
			RhoIsOne bool `json:"rho_is_one"`
		}
	}
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Cases) == 0 {
		t.Fatal("no cases")
	}
	tiny := 0
	for _, c := range ref.Cases {
		got, _ := SpearmanTrend(c.Values)
		if float64(got.Rho) != c.Rho {
			t.Errorf("%s: rho %.17g, want %.17g", c.Name, float64(got.Rho), c.Rho)
		}
		p := float64(got.P)
		if c.P == 0 {
			if !(p >= 0 && p < 1e-300) {
				t.Errorf("%s: p %g, want 0", c.Name, p)
			}
			continue
		}
		if !closeTo(p, c.P, 1e-12, 0) {
			t.Errorf("%s: p %.17g, want %.17g (rel %.2g)", c.Name, p, c.P, math.Abs(p-c.P)/c.P)
		}
		if !c.RhoIsOne && math.Abs(c.Rho) > 0.999999 {
			tiny++
		}
	}
	if tiny == 0 {
		t.Error("no case where scipy's rho rounds to 1 − 2⁻⁵³ with a positive p")
	}
}
