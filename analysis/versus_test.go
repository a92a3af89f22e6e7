package analysis

import (
	"math"
	"testing"
)

func versusInputs() []MetricInput {
	return []MetricInput{
		{Name: "startup", Unit: "ms", Samples: [][]float64{
			{101, 99, 100, 102, 98, 100, 101, 99, 100, 103},
			{106, 104, 105, 107, 103, 105, 106, 104, 105, 108},
			{100, 101, 99, 100, 102, 98, 100, 101, 99, 100},
			{96, 94, 95, 97, 93, 95, 96, 94, 95, 98}}},
		{Name: "render", Unit: "ms", Samples: [][]float64{
			{0.401, 0.399, 0.4, 0.402, 0.398, 0.4},
			{0.44, 0.441, 0.439, 0.442, 0.438, 0.44},
			{0.4, 0.401, 0.399, 0.4, 0.402, 0.398},
			{0.4, 0.401, 0.399, 0.4, 0.402, 0.398}}},
		{Name: "frame_rate", Unit: "fps", Better: BetterHigher, Samples: [][]float64{
			{58.1, 59.9, 60.2, 59.4, 58.8, 60.1}, {59.0, 60.3, 59.9, 58.7, 59.6, 60.2},
			{58.1, 59.9, 60.2, 59.4, 58.8, 60.1}, {62, 63, 62.5, 63.5, 62.2, 63.1}}},
	}
}

func TestVersusGolden(t *testing.T) {
	opt := DefaultOptions()
	opt.Labels = []string{"v1", "v2", "v2-fixed", "v3"}
	v := CompareVersus(versusInputs(), opt)
	golden(t, "versus.golden", VersusTable(v))

	check := func(j, metric int, verdict string) {
		t.Helper()
		if got := v.Comparisons[j].Metrics[metric].Verdict; got != verdict {
			t.Errorf("comparison %d metric %d: %s, want %s", j, metric, got, verdict)
		}
	}
	if len(v.Comparisons) != 3 || v.Comparisons[2].Inputs[1] != "v3" || v.Comparisons[2].Inputs[0] != "v1" {
		t.Fatalf("comparisons %d, last inputs %q", len(v.Comparisons), v.Comparisons[len(v.Comparisons)-1].Inputs)
	}
	check(0, 0, VerdictRegression)
	check(2, 0, VerdictImprovement)
	check(2, 2, VerdictImprovement) // more frames per second
	// The geomean of the two ms metrics: sqrt(100·0.4) = 6.325 for the base.
	if len(v.Geomeans) != 1 || v.Geomeans[0].Unit != "ms" || v.Geomeans[0].Metrics != 2 {
		t.Fatalf("geomeans %+v", v.Geomeans)
	}
	g := v.Geomeans[0]
	want := math.Sqrt(100 * 0.4)
	if math.Abs(float64(g.Medians[0])-want) > 1e-12 {
		t.Errorf("base geomean %v, want %v", float64(g.Medians[0]), want)
	}
	wantB := math.Sqrt(105 * 0.44)
	if d := float64(g.Delta[0]); math.Abs(d-(wantB/want-1)*100) > 1e-9 {
		t.Errorf("B geomean Δ %v%%", d)
	}
	if len(v.KruskalWallisAll) != 3 || !v.KruskalWallisAll[0].P.Defined() {
		t.Errorf("Kruskal–Wallis across all: %+v", v.KruskalWallisAll)
	}
	// A geomean is undefined when a median is not positive.
	neg := []MetricInput{
		{Name: "a", Unit: "x", Samples: [][]float64{{-1, -2, -3}, {1, 2, 3}, {1, 2, 3}}},
		{Name: "b", Unit: "x", Samples: [][]float64{{1, 2, 3}, {1, 2, 3}, {1, 2, 3}}},
	}
	if g := CompareVersus(neg, opt).Geomeans[0]; g.Medians[0].Defined() || g.Delta[0].Defined() {
		t.Errorf("geomean of a negative median: %+v", g)
	}
}

func TestTimeScale(t *testing.T) {
	for _, c := range []struct {
		unit string
		x    float64
		want string
	}{
		{"s", 0.000639, "639µs"}, {"s", 2.5, "2.5s"}, {"ms", 694.1, "694.1ms"}, {"ms", 1500, "1.5s"},
		{"ms", 0.25, "250µs"}, {"ns/op", 2737000, "2.737ms"}, {"ns/op", 12.5, "12.5ns"}, {"us", 1200, "1.2ms"},
		{"µs", 0.5, "500ns"}, {"B", 2048, "2048"}, {"fps", 59.9, "59.9"}, {"s", 0, "0"},
	} {
		if got := timeScaleFor(c.unit, c.x).format(Float(c.x)); got != c.want {
			t.Errorf("%g %s: %q, want %q", c.x, c.unit, got, c.want)
		}
	}
	if got := halfWidth(100, Interval{Low: 97, High: 101.5}); got != " ± 3%" {
		t.Errorf("halfWidth %q", got)
	}
	if got := halfWidth(100, Interval{Low: undefined(), High: 1}); got != "" {
		t.Errorf("undefined halfWidth %q", got)
	}
	if VersusTable(Versus{}) != "" {
		t.Error("empty Versus rendered something")
	}
}

// TestVersusFamily checks that the comparisons against the base are
// corrected as one family: each adjusted p is Holm's over the raw p-values
// of every input × metric, not over one comparison's metrics.
func TestVersusFamily(t *testing.T) {
	opt := DefaultOptions()
	ins := versusInputs()
	v := CompareVersus(ins, opt)
	var raw []Float
	for _, r := range v.Comparisons {
		for _, m := range r.Metrics {
			raw = append(raw, m.MannWhitney.P)
		}
	}
	adj := Adjust(raw, CorrectionHolm)
	k := 0
	for j, r := range v.Comparisons {
		for _, m := range r.Metrics {
			if got, want := float64(m.PAdjusted), float64(adj[k]); math.Abs(got-want) > 1e-12 {
				t.Errorf("comparison %d %s: p_adjusted %v, want %v (Holm over all %d tests)", j, m.Name, got, want, len(raw))
			}
			k++
		}
	}
	if v.Family != len(raw) {
		t.Errorf("family %d, want %d", v.Family, len(raw))
	}
	// One comparison alone is corrected over its own metrics only: the
	// family makes p larger (or equal), never smaller.
	alone := Compare([]MetricInput{{Name: ins[0].Name, Unit: "ms", Samples: ins[0].Samples[:2]},
		{Name: ins[1].Name, Unit: "ms", Samples: ins[1].Samples[:2]},
		{Name: ins[2].Name, Unit: "fps", Better: BetterHigher, Samples: ins[2].Samples[:2]}}, opt)
	for i, m := range alone.Metrics {
		if f := v.Comparisons[0].Metrics[i].PAdjusted; f < m.PAdjusted {
			t.Errorf("%s: family p %v below the lone comparison's %v", m.Name, float64(f), float64(m.PAdjusted))
		}
	}
}

// TestVersusPairsPerInput checks that input C is paired with the base by
// its own rounds (MorePairs), not B's.
func TestVersusPairsPerInput(t *testing.T) {
	a := []float64{100, 101, 99, 100, 102, 98, 100, 101}
	b := []float64{110, 111, 109, 110, 112, 108, 110, 111}
	c := []float64{100, 101, 99, 100, 102, 98, 100, 101}
	pairs := func(x, y []float64) []Pair {
		var p []Pair
		for i := range x {
			p = append(p, Pair{A: x[i], B: y[i]})
		}
		return p
	}
	in := []MetricInput{{Name: "t", Unit: "ms", Samples: [][]float64{a, b, c},
		Pairs: pairs(a, b), MorePairs: [][]Pair{pairs(a, c)}, MoreDropped: []int{1}}}
	v := CompareVersus(in, DefaultOptions())
	pb, pc := v.Comparisons[0].Metrics[0].Paired, v.Comparisons[1].Metrics[0].Paired
	if pb == nil || pc == nil {
		t.Fatalf("paired analyses missing: %v %v", pb, pc)
	}
	if v.Comparisons[1].Metrics[0].Verdict == VerdictRegression || pc.Dropped != 1 {
		t.Errorf("C vs A: verdict %s, dropped %d; want C's own pairs (identical to A, 1 dropped)", v.Comparisons[1].Metrics[0].Verdict, pc.Dropped)
	}
	if v.Comparisons[0].Metrics[0].Verdict != VerdictRegression {
		t.Errorf("B vs A: %s, want regression", v.Comparisons[0].Metrics[0].Verdict)
	}
}

// TestFamilyCountedOnce: the family's size is counted in correctAndDecide
// only; Versus.Family, the floors' guard and the MDE's level all take it
// from there. A metric with one value in an input is not comparable and
// stays out of it, as does its comparison's p (the former recount in
// CompareVersus is kept here as the reference).
func TestFamilyCountedOnce(t *testing.T) {
	ins := versusInputs()
	short := MetricInput{Name: "short", Unit: "ms", Samples: [][]float64{{1, 2, 3}, {4}, {5, 6, 7}}}
	ins = append(ins, short)
	for _, corr := range []string{CorrectionHolm, CorrectionBonferroni, CorrectionNone} {
		opt := DefaultOptions()
		opt.Correction = corr
		v := CompareVersus(ins, opt)
		recount := 0
		for _, r := range v.Comparisons {
			for _, m := range r.Metrics {
				if ((m.A.N >= 2 && m.B.N >= 2) || m.Paired != nil) && primaryP(m, opt.Test).Defined() {
					recount++
				}
			}
		}
		if want := len(v.Comparisons)*len(versusInputs()) + 1; v.Family != recount || recount != want {
			t.Errorf("%s: family %d, recounted %d, want %d (short is in C's comparison only)", corr, v.Family, recount, want)
		}
		fa := familyAlpha(opt.Alpha, v.Family, corr)
		for _, r := range v.Comparisons {
			for _, m := range r.Metrics {
				if m.moments == nil {
					continue
				}
				if got, want := float64(m.MDEPct), float64(mdeFrom(*m.moments, fa, PowerTarget, opt.Test)); got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
					t.Errorf("%s %s: MDE %v, want %v at the family's level %v", corr, m.Name, got, want, fa)
				}
			}
		}
	}
}
