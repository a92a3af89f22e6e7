package analysis

import (
	"math"
	"strings"
	"testing"
)

// TestCompareGeomean: a two-input comparison has benchstat's geomean row
// per unit shared by two or more metrics: the geometric mean of each
// input's medians and of the metrics' ratios B/A, 0/0 counting as 1
// (benchstat's summarizeCol). compare-bench.stdout pins it against
// benchstat's own output for the same files (sec/op 3.675m → 5.472m
// +48.90%, B/op -0.01%, allocs/op +0.00%).
func TestCompareGeomean(t *testing.T) {
	in := []MetricInput{
		{Name: "a", Unit: "ms", Samples: [][]float64{{9, 10, 11}, {19, 20, 21}}},
		{Name: "b", Unit: "ms", Samples: [][]float64{{39, 40, 41}, {9, 10, 11}}},
		{Name: "c", Unit: "B", Samples: [][]float64{{0, 0, 0}, {0, 0, 0}}},
		{Name: "d", Unit: "B", Samples: [][]float64{{4, 5, 6}, {9, 10, 11}}},
		{Name: "e", Unit: "fps", Samples: [][]float64{{59, 60, 61}, {59, 60, 61}}},
	}
	r := Compare(in, DefaultOptions())
	check := func(g Geomean, unit string, a, b, delta float64) {
		t.Helper()
		near := func(x Float, want float64) bool {
			return math.IsNaN(want) && !x.Defined() || math.Abs(float64(x)-want) < 1e-9
		}
		if g.Unit != unit || !near(g.Medians[0], a) || !near(g.Medians[1], b) || !near(g.Delta[0], delta) {
			t.Errorf("geomean %+v, want %s %g %g %+g%%", g, unit, a, b, delta)
		}
	}
	if len(r.Geomeans) != 2 {
		t.Fatalf("geomeans %+v, want ms and B (fps has one metric)", r.Geomeans)
	}
	check(r.Geomeans[0], "ms", 20, math.Sqrt(200), (math.Sqrt(2*0.25)-1)*100)
	check(r.Geomeans[1], "B", math.NaN(), math.NaN(), (math.Sqrt(1*2)-1)*100)
	tab := Table(r)
	for _, want := range []string{"\ngeomean  ms          20     14.14   -29.29%\n", "\ngeomean  B          n/a       n/a   +41.42%\n"} {
		if !strings.Contains(tab, want) {
			t.Errorf("table lacks %q:\n%s", want, tab)
		}
	}
}
