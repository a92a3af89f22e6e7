package analysis

import (
	"encoding/json"
	"fmt"
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

// alone is the disagreement warning of a pool analysed as a report's only
// pooled metric (a family of one: its raw heterogeneity p).
func alone(pa *PoolAnalysis, alpha float64) []string {
	if msg := pa.disagreement(alpha, 1); msg != "" {
		return []string{msg}
	}
	return nil
}

func TestAnalyzePoolFlagsTheDeviceThatDisagrees(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	offsets := []float64{0, 0.05, -0.05, 0.1} // speeds differ by up to 10%
	pairs, strata := poolPairs(1, offsets, []float64{0, 0, 0, 0.08}, 80)
	pa, ok := AnalyzePool(pairs, names, strata, 0.05, 0.95, 200, 1)
	warn := alone(&pa, 0.05)
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
	pa, ok = AnalyzePool(pairs, names, strata, 0.05, 0.95, 200, 1)
	warn = alone(&pa, 0.05)
	if !ok || pa.Disagrees != "" || len(warn) != 0 {
		t.Fatalf("agreeing devices: disagrees %q warnings %v", pa.Disagrees, warn)
	}
	if !(pa.Stratified.P < 1e-6 && pa.Stratified.Z > 0) {
		t.Errorf("a common +3%% change: stratified z %v p %v", pa.Stratified.Z, pa.Stratified.P)
	}

	// One device is no pool.
	if _, ok := AnalyzePool(pairs[:4], []string{"a"}, make([]int, 4), 0.05, 0.95, 200, 1); ok {
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
	pa, ok := AnalyzePool(pairs, []string{"x", "y"}, strata, 0.05, 0.95, 200, 1)
	warn := alone(&pa, 0.05)
	if !ok || pa.Disagrees != "" || len(warn) != 1 || !strings.Contains(warn[0], "devices x and y disagree") {
		t.Fatalf("disagrees %q warnings %v", pa.Disagrees, warn)
	}
}

// TestPoolDisagreementHolm: in a five-metric pool report the device
// disagreement is judged on the heterogeneity p Holm-adjusted over the
// metrics (Holm 1979). Metric 0 has a device 3 off by +300% and keeps its
// warning; metric 1's device 3 is off by +50%, raw p 0.014, which a lone
// AnalyzePool flags but five metrics' worth of noise explains (adjusted
// 0.056). Raw and adjusted p against testdata/pool_holm.py (scipy.stats.kruskal,
// Holm by hand), and the adjusted ones equal Adjust's.
func TestPoolDisagreementHolm(t *testing.T) {
	want := []struct{ raw, adj float64 }{ // pool_holm.py
		{0.0004516541965766933, 0.0022582709828834666},
		{0.014065393331624137, 0.05626157332649655},
		{0.7383073117712634, 1.0},
		{0.9695655483276451, 1.0},
		{0.9695655483276451, 1.0},
	}
	shifts := [][3]float64{{0, 0, 3}, {0, 0, 0.5}, {}, {}, {}}
	var ins []MetricInput
	for m, sh := range shifts {
		in := MetricInput{Name: fmt.Sprintf("m%d", m), Unit: "ms", Strata: []string{"p1", "p2", "p3"}, Samples: [][]float64{nil, nil}}
		for dev := range 3 {
			for j := range 8 {
				d := float64((j*7+dev*3+m*5)%11)/10 + sh[dev]
				p := Pair{A: 100, B: 100 * (1 + d)}
				in.Pairs = append(in.Pairs, p)
				in.PairStrata = append(in.PairStrata, dev)
				in.Samples[0] = append(in.Samples[0], p.A)
				in.Samples[1] = append(in.Samples[1], p.B)
			}
		}
		ins = append(ins, in)
	}
	// Alone, metric 1 is flagged at its raw p.
	if pa, ok := AnalyzePool(ins[1].Pairs, ins[1].Strata, ins[1].PairStrata, 0.05, 0.95, 200, 1); !ok || len(alone(&pa, 0.05)) != 1 || pa.Disagrees != "p3" ||
		pa.HeterogeneityPAdjusted != pa.Heterogeneity.P {
		t.Fatalf("metric 1 alone: disagrees %q, p %v adjusted %v", pa.Disagrees, pa.Heterogeneity.P, pa.HeterogeneityPAdjusted)
	}
	rep := Compare(ins, DefaultOptions())
	var raw []Float
	for _, m := range rep.Metrics {
		raw = append(raw, m.Pool.Heterogeneity.P)
	}
	holm := Adjust(raw, CorrectionHolm)
	for i, m := range rep.Metrics {
		pa := m.Pool
		if math.Abs(float64(pa.Heterogeneity.P)-want[i].raw) > 1e-12*want[i].raw ||
			math.Abs(float64(pa.HeterogeneityPAdjusted)-want[i].adj) > 1e-12*want[i].adj {
			t.Errorf("metric %d: p %v adjusted %v, scipy and Holm by hand %v %v", i, pa.Heterogeneity.P, pa.HeterogeneityPAdjusted, want[i].raw, want[i].adj)
		}
		if pa.HeterogeneityPAdjusted != holm[i] {
			t.Errorf("metric %d: adjusted %v, Adjust gives %v", i, pa.HeterogeneityPAdjusted, holm[i])
		}
		warned := false
		for _, w := range m.Warnings {
			warned = warned || strings.Contains(w, "disagrees")
		}
		if flagged := i == 0; warned != flagged || (pa.Disagrees == "p3") != flagged {
			t.Errorf("metric %d: disagrees %q, warnings %q", i, pa.Disagrees, m.Warnings)
		}
	}
	if w := strings.Join(rep.Metrics[0].Warnings, "\n"); !strings.Contains(w, "device p3 disagrees with the rest") || !strings.Contains(w, "p=0.00045; Holm over 5 metrics: 0.002)") {
		t.Errorf("metric 0 warnings: %s", w)
	}
	if tab := Table(rep); !strings.Contains(tab, "devices differ: Kruskal–Wallis p 0.014, Holm over the metrics 0.056") {
		t.Errorf("table:\n%s", tab)
	}
	b, err := json.Marshal(rep.Metrics[1].Pool)
	if err != nil || !strings.Contains(string(b), `"heterogeneity_p_adjusted":0.05626157332649`) || !strings.Contains(string(b), `"p":0.01406539333162`) {
		t.Errorf("JSON %s (%v)", b, err)
	}
}
