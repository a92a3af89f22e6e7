package analysis

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestStratifiedWilcoxonAgainstSciPy checks StratifiedWilcoxon's z and p
// to 1e-12 relative, on one stratum and on several, against the values
// testdata/stratified_wilcoxon.py prints (van Elteren's weights with
// scipy.stats.rankdata and norm.sf; the script asserts its one-stratum
// cases equal scipy.stats.wilcoxon(method="approx", correction=False)),
// and that a stratum of zeros alone leaves p undefined.
func TestStratifiedWilcoxonAgainstSciPy(t *testing.T) {
	for _, c := range []struct {
		strata [][]float64
		z, p   float64
	}{
		{[][]float64{{0.01, -0.02, 0.03, 0.05, -0.01, 0.04, 0.02, 0.06}}, 1.8248422564933506, 0.068024837072217015},
		{[][]float64{{0.01, 0.01, -0.02, 0.0, 0.03, 0.03, 0.05}}, 1.5811388300841898, 0.11384629800665805},
		{[][]float64{{0.01, -0.02, 0.03, 0.05}, {0.02, 0.04, -0.01, 0.03, 0.07, 0.01}, {-0.03, 0.01, 0.02}}, 1.9043882007482646, 0.056859644760172544},
		{[][]float64{{0.1, 0.2, 0.1, -0.05, 0.3}, {0.0, 0.01, -0.01, 0.02, 0.02, 0.03, -0.02, 0.01, 0.04}}, 2.3104633716775553, 0.020862514141226488},
	} {
		got := StratifiedWilcoxon(c.strata)
		if math.Abs(float64(got.Z)-c.z) > 1e-12*math.Abs(c.z) || math.Abs(float64(got.P)-c.p) > 1e-12*c.p {
			t.Errorf("%v: z %v p %v, want %v %v", c.strata, got.Z, got.P, c.z, c.p)
		}
	}
	if got := StratifiedWilcoxon([][]float64{{0, 0}}); got.P.Defined() {
		t.Errorf("all zeros: p %v", got.P)
	}
}

// poolPairs simulates rounds on devices with their own speed (an offset
// the pairing removes) and their own true change.
func poolPairs(seed uint64, offsets, effects []float64, n int) ([]Pair, []int) {
	rng := rand.New(rand.NewPCG(seed, 1))
	var pairs []Pair
	var strata []int
	for i := range n {
		s := i % len(offsets)
		a := 100 * (1 + offsets[s]) * math.Exp(0.01*rng.NormFloat64())
		b := 100 * (1 + offsets[s]) * (1 + effects[s]) * math.Exp(0.01*rng.NormFloat64())
		pairs = append(pairs, Pair{A: a, B: b})
		strata = append(strata, s)
	}
	return pairs, strata
}

func TestAnalyzePoolFlagsTheDeviceThatDisagrees(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	offsets := []float64{0, 0.05, -0.05, 0.1} // speeds differ by up to 10%
	pairs, strata := poolPairs(1, offsets, []float64{0, 0, 0, 0.08}, 80)
	pa, warn, ok := AnalyzePool(pairs, names, strata, 0.05, 0.95, 200, 1)
	if !ok || len(pa.Devices) != 4 {
		t.Fatalf("ok %v devices %d", ok, len(pa.Devices))
	}
	if pa.Disagrees != "d" || len(warn) != 1 || !strings.Contains(warn[0], "device d disagrees") {
		t.Fatalf("disagrees %q warnings %v (Kruskal–Wallis p %v)", pa.Disagrees, warn, pa.Heterogeneity.P)
	}
	if d := pa.Devices[3]; !(d.DeltaPct > 6 && d.DeltaPct < 10) {
		t.Errorf("device d's own Δ %v, want about +8%%", d.DeltaPct)
	}

	// The same offsets with one common change: no device stands out.
	pairs, strata = poolPairs(2, offsets, []float64{0.03, 0.03, 0.03, 0.03}, 80)
	pa, warn, ok = AnalyzePool(pairs, names, strata, 0.05, 0.95, 200, 1)
	if !ok || pa.Disagrees != "" || len(warn) != 0 {
		t.Fatalf("agreeing devices: disagrees %q warnings %v", pa.Disagrees, warn)
	}
	if !(pa.Stratified.P < 1e-6 && pa.Stratified.Z > 0) {
		t.Errorf("a common +3%% change: stratified z %v p %v", pa.Stratified.Z, pa.Stratified.P)
	}

	// One device is no pool.
	if _, _, ok := AnalyzePool(pairs[:4], []string{"a"}, make([]int, 4), 0.05, 0.95, 200, 1); ok {
		t.Error("one device analysed as a pool")
	}
}

func TestCompareShowsThePool(t *testing.T) {
	pairs, strata := poolPairs(3, []float64{0, 0.1, 0}, []float64{0, 0.1, 0}, 60)
	in := MetricInput{Name: "startup", Unit: "ms", Pairs: pairs, Strata: []string{"", "p1", "p2", "p3"}}
	for i := range pairs {
		in.PairStrata = append(in.PairStrata, strata[i]+1)
	}
	in.Samples = [][]float64{nil, nil}
	for _, p := range pairs {
		in.Samples[0] = append(in.Samples[0], p.A)
		in.Samples[1] = append(in.Samples[1], p.B)
	}
	rep := Compare([]MetricInput{in}, DefaultOptions())
	m := rep.Metrics[0]
	if m.Pool == nil || len(m.Pool.Devices) != 3 || m.Pool.Devices[0].Device != "p1" {
		t.Fatalf("pool %+v", m.Pool)
	}
	out := Table(rep)
	for _, want := range []string{"per device, startup ms", "p2", "disagrees", "stratified signed-rank", "device p2 disagrees with the rest"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestAnalyzePoolTwoDevicesThatDisagree(t *testing.T) {
	pairs, strata := poolPairs(4, []float64{0, 0.1}, []float64{0, 0.1}, 40)
	pa, warn, ok := AnalyzePool(pairs, []string{"x", "y"}, strata, 0.05, 0.95, 200, 1)
	if !ok || pa.Disagrees != "" || len(warn) != 1 || !strings.Contains(warn[0], "devices x and y disagree") {
		t.Fatalf("disagrees %q warnings %v", pa.Disagrees, warn)
	}
}
