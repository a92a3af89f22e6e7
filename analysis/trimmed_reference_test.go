package analysis

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTrimmedLocationAgainstSciPy checks the trimmed mean, its standard
// error and the trimmed t-test's p against SciPy (scipy.stats.trim_mean,
// scipy.stats.mstats.trimmed_stde, scipy.stats.t.sf with h − 1 degrees of
// freedom) on heavy-tailed samples of 2 to 40 values
// (testdata/gen_trimmed_reference.py).
func TestTrimmedLocationAgainstSciPy(t *testing.T) {
	var cases []struct {
		X    []float64 `json:"x"`
		Trim float64   `json:"trim"`
		Est  float64   `json:"est"`
		SE   float64   `json:"se"`
		DF   float64   `json:"df"`
		P    *float64  `json:"p"`
	}
	readJSON(t, "testdata/trimmed_reference.json", &cases)
	if len(cases) < 20 {
		t.Fatalf("only %d reference cases", len(cases))
	}
	close := func(got, want float64) bool { return math.Abs(got-want) <= 1e-12*math.Max(1, math.Abs(want)) }
	for _, c := range cases {
		x := slices.Sorted(slices.Values(c.X))
		est, se, df := TrimmedLocation(x, c.Trim)
		if !close(est, c.Est) || !close(se, c.SE) || df != c.DF {
			t.Errorf("n %d, trim %g: est %g se %g df %g, scipy %g %g %g", len(x), c.Trim, est, se, df, c.Est, c.SE, c.DF)
		}
		if c.P != nil {
			if p := 2 * studentTTail(math.Abs(est)/se, df); math.Abs(p-*c.P) > 1e-9 {
				t.Errorf("n %d, trim %g: p %g, scipy %g", len(x), c.Trim, p, *c.P)
			}
		}
	}
}

// TestTrimmedCritMatchesLevels: the trimmed analysis' critical value at
// every look has the look's nominal level with the degrees of freedom
// TrimmedLocation gives for that many values.
func TestTrimmedCritMatchesLevels(t *testing.T) {
	d := newGSDesign(0.05, 60)
	for _, trim := range []float64{0.1, DefaultSuiteTrim, MaxTrim} {
		crit := d.trimmedCrit(trim)
		for k := 2; k <= d.maxK; k++ {
			_, _, df := TrimmedLocation(make([]float64, k), trim)
			if d.levels[k] < 1e-12 {
				continue
			}
			if lvl := 2 * studentTTail(crit[k], df); math.Abs(lvl-d.levels[k]) > 1e-9*d.levels[k] {
				t.Errorf("trim %g, look %d: critical value %g has level %g with %g df, want %g", trim, k, crit[k], lvl, df, d.levels[k])
			}
		}
	}
}

// TestSequentialTrimmed asks one question of the trimmed sequential
// analysis (Trim 0.2, the suite's): does it keep the stop-auto rule's
// error rate and gain the power the mean loses when some rounds run long?
// The rounds are log ratios with a 3% spread and, in 10% of rounds, one of
// the two runs slowed 1.3–2× (a context switch in a short benchmark run,
// as on VictoriaMetrics' benchmarks, docs/suite.md). Over 1,000 seeded
// A/A experiments of 30 rounds the trimmed rule's false positives stay
// within the 99.9% binomial band's upper end around α; with a +5% change
// it decides it at least 1.5 times as often as the mean.
func TestSequentialTrimmed(t *testing.T) {
	const experiments, maxRounds, alpha = 1000, 30, 0.05
	round := func(rng *rand.Rand, effect float64) float64 {
		x := math.Log1p(effect) + 0.03*rng.NormFloat64()
		if rng.Float64() < 0.1 {
			slow := math.Log(1.3 + 0.7*rng.Float64())
			if rng.IntN(2) == 0 {
				slow = -slow
			}
			x += slow
		}
		return x
	}
	run := func(rng *rand.Rand, effect, trim float64, d *gsDesign) string {
		st := newSequentialTest(SequentialOptions{Alpha: alpha, MaxRounds: maxRounds, Trim: trim}, d)
		for range maxRounds {
			st.Add(round(rng, effect))
			if st.Decided() {
				break
			}
		}
		return st.result(false).Decision
	}
	d := sequentialDesign(SequentialOptions{Alpha: alpha, MaxRounds: maxRounds})
	count := func(effect, trim float64, want ...string) int {
		rng := rand.New(rand.NewPCG(2026, 1129))
		n := 0
		for range experiments {
			if slices.Contains(want, run(rng, effect, trim, d)) {
				n++
			}
		}
		return n
	}
	_, hi := BinomialRange(experiments, alpha, 0.999)
	fp := count(0, DefaultSuiteTrim, VerdictRegression, VerdictImprovement)
	meanFP := count(0, 0, VerdictRegression, VerdictImprovement)
	trimmed, mean := count(0.05, DefaultSuiteTrim, VerdictRegression), count(0.05, 0, VerdictRegression)
	t.Logf("A/A false positives: trimmed %d, mean %d of %d (band's upper end %d); +5%% detected: trimmed %d, mean %d",
		fp, meanFP, experiments, hi, trimmed, mean)
	if fp > hi {
		t.Errorf("trimmed A/A false positives %d above %d", fp, hi)
	}
	if float64(trimmed) < 1.5*float64(mean) {
		t.Errorf("trimmed detected %d, mean %d: want 1.5 times as often", trimmed, mean)
	}
}
