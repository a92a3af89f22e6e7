package analysis

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
)

func TestSelectKMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{1, 2, 3, 16, 17, 18, 100, 1001} {
		for _, ties := range []bool{false, true} {
			xs := make([]float64, n)
			for i := range xs {
				if ties {
					xs[i] = float64(rng.IntN(4))
				} else {
					xs[i] = rng.NormFloat64()
				}
			}
			sorted := slices.Clone(xs)
			slices.Sort(sorted)
			for _, k := range []int{0, n / 2, n - 1} {
				if got := selectK(slices.Clone(xs), k); got != sorted[k] {
					t.Errorf("n=%d ties=%v: selectK(%d) = %v, want %v", n, ties, k, got, sorted[k])
				}
			}
			if got, want := medianInPlace(slices.Clone(xs)), medianSorted(sorted); got != want {
				t.Errorf("n=%d ties=%v: median %v, want %v", n, ties, got, want)
			}
		}
	}
}

// bruteHL is the Hodges–Lehmann estimate the obvious way.
func bruteHL(a, b []float64) float64 {
	var d []float64
	for _, x := range a {
		for _, y := range b {
			d = append(d, y-x)
		}
	}
	sort.Float64s(d)
	return medianSorted(d)
}

func TestHodgesLehmannMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 9))
	for trial := range 300 {
		na, nb := 1+rng.IntN(60), 1+rng.IntN(60)
		a, b := make([]float64, na), make([]float64, nb)
		for i := range a {
			a[i] = math.Round(rng.NormFloat64()*10) / float64(1+trial%3*4) // ties on some trials
		}
		for i := range b {
			b[i] = math.Round(rng.NormFloat64()*10+3) / float64(1+trial%3*4)
		}
		got, want := HodgesLehmann(a, b), bruteHL(a, b)
		if float64(got) != want {
			t.Fatalf("trial %d (na=%d nb=%d): HodgesLehmann = %v, want %v", trial, na, nb, float64(got), want)
		}
	}
	if HodgesLehmann(nil, []float64{1}).Defined() {
		t.Error("HodgesLehmann of an empty sample is defined")
	}
}

func TestMannWhitneyExactDistribution(t *testing.T) {
	binom := func(n, k int) float64 {
		r := 1.0
		for i := 1; i <= k; i++ {
			r = r * float64(n-k+i) / float64(i)
		}
		return r
	}
	for m := 1; m <= maxExactN; m++ {
		for n := 1; n <= maxExactN+4; n++ {
			counts := mwuLowerCounts(m, n, m*n)
			total := 0.0
			for u, c := range counts {
				total += c
				if c != counts[m*n-u] {
					t.Fatalf("m=%d n=%d: distribution not symmetric at u=%d", m, n, u)
				}
			}
			if total != binom(m+n, m) {
				t.Errorf("m=%d n=%d: %v arrangements, want C(%d,%d)=%v", m, n, total, m+n, m, binom(m+n, m))
			}
		}
	}
	// Complete separation of 3 and 3 values: p = 2/C(6,3) = 0.1.
	if p := mwuMinP(3, 3); math.Abs(p-0.1) > 1e-15 {
		t.Errorf("mwuMinP(3,3) = %v, want 0.1", p)
	}
}

// TestBootstrapOrderStatisticsMatchesResampling checks that drawing each
// replicate's median from its order-statistic distribution gives the same
// bootstrap distribution as classic resampling, on odd, even, tied and
// unequal samples.
func TestBootstrapOrderStatisticsMatchesResampling(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	gen := func(n int, ties bool) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = rng.ExpFloat64() * 10
			if ties {
				xs[i] = math.Round(xs[i] / 5)
			}
		}
		return xs
	}
	cases := []struct {
		name string
		a, b []float64
	}{
		{"odd", gen(15, false), gen(21, false)},
		{"even", gen(20, false), gen(30, false)},
		{"ties", gen(24, true), gen(17, true)},
		{"small", gen(4, false), gen(5, false)},
	}
	const r = 200000
	for _, c := range cases {
		fast, _ := BootstrapMedianDiff(c.a, c.b, 0.9, r, 11)
		slow, _ := BootstrapMedianDiffResampling(c.a, c.b, 0.9, r, 12)
		tol := 0.05 * float64(slow.SE)
		if math.Abs(float64(fast.SE-slow.SE)) > 0.02*float64(slow.SE) {
			t.Errorf("%s: SE %v (order statistics) vs %v (resampling)", c.name, float64(fast.SE), float64(slow.SE))
		}
		for _, q := range []struct {
			name       string
			fast, slow Float
		}{{"low", fast.Low, slow.Low}, {"high", fast.High, slow.High}} {
			if math.Abs(float64(q.fast-q.slow)) > tol {
				t.Errorf("%s: %s %v (order statistics) vs %v (resampling)", c.name, q.name, float64(q.fast), float64(q.slow))
			}
		}
	}
}

func TestBootstrapDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	a, b := make([]float64, 101), make([]float64, 100)
	for i := range a {
		a[i] = rng.NormFloat64()
	}
	for i := range b {
		b[i] = rng.NormFloat64() + 0.3
	}
	first, _ := BootstrapMedianDiff(a, b, 0.95, 10000, 42)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	single, _ := BootstrapMedianDiff(a, b, 0.95, 10000, 42)
	runtime.GOMAXPROCS(8)
	many, _ := BootstrapMedianDiff(a, b, 0.95, 10000, 42)
	if !reflect.DeepEqual(first, single) || !reflect.DeepEqual(first, many) {
		t.Errorf("bootstrap depends on parallelism:\n%+v\n%+v\n%+v", first, single, many)
	}
	other, _ := BootstrapMedianDiff(a, b, 0.95, 10000, 43)
	if reflect.DeepEqual(first, other) {
		t.Error("bootstrap ignores its seed")
	}
}

func TestVerdicts(t *testing.T) {
	base := make([]float64, 30)
	shifted := make([]float64, 30)
	same := make([]float64, 30)
	rng := rand.New(rand.NewPCG(8, 8))
	for i := range base {
		base[i] = 100 + rng.NormFloat64()
		shifted[i] = 103 + rng.NormFloat64()
		same[i] = 100 + rng.NormFloat64()
	}
	check := func(name string, in MetricInput, opt Options, want string, warnContains string) {
		t.Helper()
		r := Compare([]MetricInput{in}, opt)
		m := r.Metrics[0]
		if m.Verdict != want {
			t.Errorf("%s: verdict %q, want %q (warnings %q)", name, m.Verdict, want, m.Warnings)
		}
		if warnContains != "" && !strings.Contains(strings.Join(m.Warnings, "\n"), warnContains) {
			t.Errorf("%s: warnings %q lack %q", name, m.Warnings, warnContains)
		}
	}
	def := DefaultOptions()
	welch := def
	welch.Test = TestWelch
	check("slower, lower better", MetricInput{Name: "ms", Samples: [][]float64{base, shifted}}, def, VerdictRegression, "")
	check("faster, lower better", MetricInput{Name: "ms", Samples: [][]float64{shifted, base}}, def, VerdictImprovement, "")
	check("higher, higher better", MetricInput{Name: "fps", Better: BetterHigher, Samples: [][]float64{base, shifted}}, def, VerdictImprovement, "")
	check("lower, higher better", MetricInput{Name: "fps", Better: BetterHigher, Samples: [][]float64{shifted, base}}, welch, VerdictRegression, "")
	check("not significant, no threshold", MetricInput{Name: "ms", Samples: [][]float64{base, same}}, def, VerdictInconclusive, "")
	check("not significant welch, no threshold", MetricInput{Name: "ms", Samples: [][]float64{base, same}}, welch, VerdictInconclusive, "")
	thr := def
	thr.ThresholdPct = 2
	check("equivalent within 2%", MetricInput{Name: "ms", Samples: [][]float64{base, same}}, thr, VerdictNoChange, "")
	welchThr := welch
	welchThr.ThresholdPct = 2
	check("equivalent within 2% welch", MetricInput{Name: "ms", Samples: [][]float64{base, same}}, welchThr, VerdictNoChange, "")
	thr.ThresholdPct = 0.5
	check("interval wider than ±0.5%", MetricInput{Name: "ms", Samples: [][]float64{base, same}}, thr, VerdictInconclusive, "")
	thr.ThresholdPct = 5
	check("3% slower, threshold 5%", MetricInput{Name: "ms", Samples: [][]float64{base, shifted}}, thr, VerdictNoChange, "")
	// A threshold between the estimate and the interval's far end: the
	// change is significant, below the threshold, but not shown to be.
	d := Compare([]MetricInput{{Name: "ms", Samples: [][]float64{base, shifted}}}, def).Metrics[0].Decision
	thr.ThresholdPct = (float64(d.DeltaPct) + float64(d.CIHighPct)) / 2
	r := Compare([]MetricInput{{Name: "ms", Samples: [][]float64{base, shifted}}}, thr).Metrics[0]
	if r.Verdict != VerdictInconclusive || !r.Decision.BelowThreshold || !r.Decision.MoreTrials.Defined() {
		t.Errorf("significant below threshold %v: %s %+v", thr.ThresholdPct, r.Verdict, r.Decision)
	}
	if n := DecisionNote(r, thr.ThresholdPct); !strings.Contains(n, "significant but below the threshold") {
		t.Errorf("note %q", n)
	}
	check("empty B", MetricInput{Name: "ms", Samples: [][]float64{base, nil}}, def, VerdictInconclusive, "B has no values")
	check("missing B", MetricInput{Name: "ms", Samples: [][]float64{base}}, def, VerdictInconclusive, "B has no values")
	check("one value", MetricInput{Name: "ms", Samples: [][]float64{{1}, base}}, def, VerdictInconclusive, "A has only 1 value")
	check("3 vs 3 cannot be significant", MetricInput{Name: "ms", Samples: [][]float64{{1, 2, 3}, {10, 11, 12}}}, def,
		VerdictInconclusive, "smallest possible Mann–Whitney p is 0.1")
	check("3 vs 3 welch", MetricInput{Name: "ms", Samples: [][]float64{{1, 2, 3}, {10, 11, 12}}}, welch, VerdictRegression, "")
	check("identical constants", MetricInput{Name: "ms", Samples: [][]float64{{5, 5, 5, 5}, {5, 5, 5, 5}}}, def,
		VerdictInconclusive, "A and B are the same constant (5)")
	check("different constants", MetricInput{Name: "instructions", Samples: [][]float64{
		{100, 100, 100, 100, 100, 100}, {110, 110, 110, 110, 110, 110}}}, def, VerdictRegression, "")
	drift := make([]float64, 20)
	for i := range drift {
		drift[i] = float64(i)
	}
	check("drift warning", MetricInput{Name: "ms", Samples: [][]float64{drift, drift}}, def, VerdictInconclusive, "A may drift with trial order")
}

func TestCorrectionAcrossMetrics(t *testing.T) {
	// Two metrics with raw p just under alpha: Bonferroni doubles both, so
	// neither stays significant; "none" keeps both.
	a := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	b := []float64{4, 5, 6, 7, 8, 9, 10, 11, 12, 13}
	in := []MetricInput{{Name: "x", Samples: [][]float64{a, b}}, {Name: "y", Samples: [][]float64{a, b}}}
	for _, c := range []struct {
		correction string
		want       string
	}{{CorrectionNone, VerdictRegression}, {CorrectionBonferroni, VerdictInconclusive}, {CorrectionHolm, VerdictInconclusive}} {
		opt := DefaultOptions()
		opt.Correction = c.correction
		opt.Test = TestWelch
		r := Compare(in, opt)
		p := float64(r.Metrics[0].Welch.P)
		if !(p < 0.05 && p > 0.025) {
			t.Fatalf("test data: raw p %v not in (0.025, 0.05)", p)
		}
		for _, m := range r.Metrics {
			if m.Verdict != c.want {
				t.Errorf("%s: %s verdict %q, want %q (p=%v adj=%v)", c.correction, m.Name, m.Verdict, c.want, p, float64(m.PAdjusted))
			}
		}
	}
}

// TestJSONContract checks the report's JSON field names against the
// contract of issue 2 and that undefined values are null, never NaN.
func TestJSONContract(t *testing.T) {
	r := Compare([]MetricInput{
		{Name: "t", Unit: "ms", Samples: [][]float64{{1, 2, 3, 4, 5}, {2, 3, 4, 5, 6}, {1, 1, 2}}},
		{Name: "c", Unit: "ms", Samples: [][]float64{{3, 3, 3}, {3, 3, 3}}},
	}, DefaultOptions())
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "NaN") {
		t.Fatalf("JSON holds NaN: %s", data)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	keys := func(v any) []string {
		var ks []string
		for k := range v.(map[string]any) {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	}
	has := func(where string, v any, want ...string) {
		t.Helper()
		got := keys(v)
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("%s lacks %q (has %q)", where, w, got)
			}
		}
	}
	has("report", doc, "alpha", "confidence", "correction", "primary_test", "metrics")
	m := doc["metrics"].([]any)[0].(map[string]any)
	// The all-inputs test only where there are more than two inputs: not at
	// the top with two metrics, not for c (A and B only).
	has("metric t", m, "kruskal_wallis_all")
	for where, v := range map[string]any{"report": doc, "metric c": doc["metrics"].([]any)[1]} {
		if _, ok := v.(map[string]any)["kruskal_wallis_all"]; ok {
			t.Errorf("%s has kruskal_wallis_all", where)
		}
	}
	has("metric", m, "name", "unit", "better", "a", "b", "delta_pct_mean", "delta_pct_median", "hodges_lehmann",
		"welch", "mann_whitney", "kruskal_wallis", "bootstrap", "trend", "mde_pct", "p_adjusted", "verdict", "warnings")
	has("a", m["a"], "n", "mean", "median", "sd", "cv", "min", "max")
	has("b", m["b"], "n", "mean", "median", "sd", "cv", "min", "max")
	has("welch", m["welch"], "t", "df", "p", "ci_low", "ci_high")
	has("mann_whitney", m["mann_whitney"], "u", "p", "p_asymptotic", "exact")
	has("kruskal_wallis", m["kruskal_wallis"], "h", "p")
	has("bootstrap", m["bootstrap"], "point", "low", "high", "se", "resamples")
	has("trend", m["trend"], "a", "b")
	has("trend.a", m["trend"].(map[string]any)["a"], "rho", "p")
	c := doc["metrics"].([]any)[1].(map[string]any)
	if c["welch"].(map[string]any)["p"] != nil {
		t.Errorf("constant metric: welch.p = %v, want null", c["welch"].(map[string]any)["p"])
	}
	if c["verdict"] != VerdictInconclusive {
		t.Errorf("constant metric verdict %v", c["verdict"])
	}
	if w, ok := c["warnings"].([]any); !ok || len(w) == 0 {
		t.Errorf("constant metric: warnings %v, want some", c["warnings"])
	}

	// Round trip keeps undefined values undefined.
	var back Report
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Metrics[1].Welch.P.Defined() || !back.Metrics[0].Welch.P.Defined() {
		t.Errorf("round trip: welch.p %v / %v", float64(back.Metrics[1].Welch.P), float64(back.Metrics[0].Welch.P))
	}
}

func TestSummarizeEdgeCases(t *testing.T) {
	check := func(name string, xs []float64, wantMean, wantSD, wantCV float64) {
		t.Helper()
		s := Summarize(xs)
		for _, f := range []struct {
			field string
			got   Float
			want  float64
		}{{"mean", s.Mean, wantMean}, {"sd", s.SD, wantSD}, {"cv", s.CV, wantCV}} {
			if math.IsNaN(f.want) {
				if f.got.Defined() {
					t.Errorf("%s: %s = %v, want undefined", name, f.field, float64(f.got))
				}
			} else if !closeTo(float64(f.got), f.want, 1e-12, 0) {
				t.Errorf("%s: %s = %v, want %v", name, f.field, float64(f.got), f.want)
			}
		}
	}
	nan := math.NaN()
	check("empty", nil, nan, nan, nan)
	check("one", []float64{3}, 3, nan, nan)
	check("zero mean", []float64{-1, 1}, 0, math.Sqrt2, nan)
	check("huge", []float64{1.7e308, 1.7e308, 1.7e308}, 1.7e308, 0, 0)
	check("huge spread", []float64{-1e308, 1e308}, 0, 1e308*math.Sqrt2, nan)
}

// TestMannWhitneyShiftMatchesSeparate: MannWhitneyShift gives exactly
// MannWhitneyU(a, b) and HodgesLehmann(b, a), on samples long enough for
// its shared radix sort and on short ones, with ties, signed zeros,
// negative values, subnormals and NaN.
func TestMannWhitneyShiftMatchesSeparate(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	for trial := range 60 {
		gen := func(n int) []float64 {
			xs := make([]float64, n)
			for i := range xs {
				switch k := rng.IntN(50); {
				case trial%6 == 0 && k < 10:
					xs[i] = float64(rng.IntN(5)) // ties
				case trial%6 == 1 && k < 5:
					xs[i] = math.Copysign(0, float64(k%2*2-1))
				case trial%6 == 2 && k < 5:
					xs[i] = 5e-324 * float64(k)
				case trial%6 == 3 && k == 0 && i == 7:
					xs[i] = math.NaN()
				default:
					xs[i] = math.Ldexp(rng.NormFloat64(), trial%9*20-80)
				}
			}
			return xs
		}
		n := []int{3, 40, 600, 2000}[trial%4]
		a, b := gen(n+rng.IntN(50)), gen(n+rng.IntN(50))
		wantMW, wantW := MannWhitneyU(a, b)
		wantHL := HodgesLehmann(b, a)
		gotMW, gotW, gotHL := MannWhitneyShift(slices.Clone(a), slices.Clone(b))
		same := func(x, y Float) bool { return math.Float64bits(float64(x)) == math.Float64bits(float64(y)) }
		if !same(gotHL, wantHL) || !same(gotMW.U, wantMW.U) || !same(gotMW.P, wantMW.P) ||
			!same(gotMW.PAsymptotic, wantMW.PAsymptotic) || gotMW.Exact != wantMW.Exact || !slices.Equal(gotW, wantW) {
			t.Fatalf("trial %d (n %d, %d): MannWhitneyShift %+v %q %v, want %+v %q %v", trial, len(a), len(b), gotMW, gotW, gotHL, wantMW, wantW, wantHL)
		}
	}
}
