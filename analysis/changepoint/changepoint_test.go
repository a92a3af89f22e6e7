package changepoint_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/perflab/perflab/analysis/changepoint"
	"github.com/perflab/perflab/internal/cpstudy"
)

// TestChangepointScipy checks the steps found in fixed series, and each
// step's before and after against testdata/reference.json, SciPy's 20%
// trimmed means (scipy.stats.trim_mean) by testdata/gen_reference.py;
// each step's p must pass the default alpha.
func TestChangepointScipy(t *testing.T) {
	b, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []struct {
			Name   string
			Series []float64
			Steps  []struct {
				Index         int
				Before, After float64
			}
		}
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	close := func(got, want, rel float64) bool {
		return math.Abs(got-want) <= rel*math.Abs(want)
	}
	for _, c := range ref.Cases {
		t.Run(c.Name, func(t *testing.T) {
			steps, err := changepoint.Detect(c.Series, changepoint.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(steps) != len(c.Steps) {
				t.Fatalf("found %d steps %+v, want %d at %+v", len(steps), steps, len(c.Steps), c.Steps)
			}
			for i, want := range c.Steps {
				got := steps[i]
				if got.Index != want.Index {
					t.Errorf("step %d at %d, want %d", i, got.Index, want.Index)
					continue
				}
				if !(got.P < changepoint.DefaultAlpha) || !close(got.Before, want.Before, 1e-12) || !close(got.After, want.After, 1e-12) {
					t.Errorf("step at %d: p %g before %g after %g, SciPy's trimmed means before %g after %g",
						got.Index, got.P, got.Before, got.After, want.Before, want.After)
				}
				if d := (got.After - got.Before) / got.Before * 100; !close(float64(got.DeltaPct), d, 1e-12) {
					t.Errorf("step at %d: delta_pct %v, want %v", got.Index, got.DeltaPct, d)
				}
			}
		})
	}
}

func TestChangepointOptions(t *testing.T) {
	check := func(name string, xs []float64, opt changepoint.Options, wantErr bool) {
		t.Helper()
		_, err := changepoint.Detect(xs, opt)
		if (err != nil) != wantErr {
			t.Errorf("%s: error %v, want error %v", name, err, wantErr)
		}
	}
	xs := []float64{1, 2, 3, 4, 5, 6}
	check("defaults", xs, changepoint.Options{}, false)
	check("min segment 1", xs, changepoint.Options{MinSegment: 1}, true)
	check("alpha 1", xs, changepoint.Options{Alpha: 1}, true)
	check("alpha negative", xs, changepoint.Options{Alpha: -0.1}, true)
	check("NaN value", []float64{1, math.NaN(), 3}, changepoint.Options{}, true)
	check("empty", nil, changepoint.Options{}, false)
}

// TestChangepointConstantSegments: constant levels make the t-test
// undefined; a jump between them is still a step, and a constant series
// has none.
func TestChangepointConstantSegments(t *testing.T) {
	check := func(xs []float64, want []int) {
		t.Helper()
		steps, err := changepoint.Detect(xs, changepoint.Options{MinSegment: 3})
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, s := range steps {
			got = append(got, s.Index)
		}
		if len(got) != len(want) || (len(got) > 0 && got[0] != want[0]) {
			t.Errorf("%v: steps at %v, want %v", xs, got, want)
		}
	}
	check([]float64{5, 5, 5, 5, 5, 5, 5, 5}, nil)
	check([]float64{5, 5, 5, 5, 7, 7, 7, 7}, []int{4})
	check([]float64{0, 0, 0, 0, 7, 7, 7, 7}, []int{4})
}

// TestChangepointZeroBefore: a step from a level of 0 has no relative
// size.
func TestChangepointZeroBefore(t *testing.T) {
	steps, err := changepoint.Detect([]float64{0, 0, 0, 0, 0, 3, 3, 3, 3, 3}, changepoint.Options{MinSegment: 5})
	if err != nil || len(steps) != 1 {
		t.Fatalf("steps %+v, err %v", steps, err)
	}
	if steps[0].DeltaPct.Defined() {
		t.Errorf("delta_pct %v from a level of 0, want undefined", steps[0].DeltaPct)
	}
}

// TestChangepointSmallStudy is a seeded small version of
// bench/changepoint_study: steps of 3σ located within ±2, spikes never a
// step, step-free series clean, for independent and autocorrelated noise.
func TestChangepointSmallStudy(t *testing.T) {
	for _, tc := range []struct {
		phi                   float64
		precision, recall     float64 // at least
		maxFalse, minMiddle3σ int
	}{
		// The study's figures at 1,000 series a family (seed 1):
		// precision 0.966, recall 0.930 (φ 0); 0.945, 0.852 (φ 0.5);
		// 0.950, 0.745 (φ 0.7); here (seed 3, 60 series) 0.980, 0.970;
		// 0.965, 0.812; 0.986, 0.723, and 40, 36, 36 of 40 lone 3σ steps.
		// 60 series leave room for chance but not for a broken detector.
		// False steps: 0.1, 0.5 and 0.7 per 100 step-free series in the
		// study, 0.2, 0.9 and 1.3 expected in these 180 (none found).
		{phi: 0, precision: 0.9, recall: 0.8, maxFalse: 3, minMiddle3σ: 36},
		{phi: 0.5, precision: 0.85, recall: 0.65, maxFalse: 5, minMiddle3σ: 30},
		{phi: 0.7, precision: 0.85, recall: 0.6, maxFalse: 6, minMiddle3σ: 30},
	} {
		r := rand.New(rand.NewPCG(7, 30))
		found := 0
		const reps = 40
		for range reps {
			s := cpstudy.Generate(r, cpstudy.Stationary, 200, tc.phi)
			at := 50 + r.IntN(100)
			for i := at; i < len(s.Values); i++ {
				s.Values[i] += 3 * cpstudy.Sigma
			}
			steps, err := changepoint.Detect(s.Values, changepoint.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(steps) == 1 && math.Abs(float64(steps[0].Index-at)) <= cpstudy.Tolerance {
				found++
			}
		}
		if found < tc.minMiddle3σ {
			t.Errorf("φ %g: one 3σ step located within ±2 in %d of %d series", tc.phi, found, reps)
		}
		res, err := cpstudy.Run(cpstudy.Config{Seed: 3, PerKind: 60, N: 200, Phi: tc.phi})
		if err != nil {
			t.Fatal(err)
		}
		if res.SpikeSteps != 0 {
			t.Errorf("φ %g: %d spikes reported as a step", tc.phi, res.SpikeSteps)
		}
		if f := res.Found[cpstudy.Stationary] + res.Found[cpstudy.Outliers] + res.Found[cpstudy.Spike]; f > tc.maxFalse {
			t.Errorf("φ %g: %d steps in %d step-free series", tc.phi, f, 3*res.Config.PerKind)
		}
		if res.Precision() < tc.precision || res.Recall() < tc.recall {
			t.Errorf("φ %g: precision %.3f, recall %.3f of steps ≥ 2σ, want ≥ %g and ≥ %g", tc.phi, res.Precision(), res.Recall(), tc.precision, tc.recall)
		}
	}
}

// TestChangepointTigerBeetle: a real benchmark history (testdata/README.md)
// whose −12% step comes five builds after a one-build outlier; the
// outlier widened the Welch test's variance past the step, so the
// detector before this one found only the +17% and −4% steps (71 and 95).
// All must be found, with the +3.5% step at 61 that Apache Otava's own
// tests of this history also report (at p 0.001), and the outlier is no
// step.
func TestChangepointTigerBeetle(t *testing.T) {
	b, err := os.ReadFile("testdata/tigerbeetle.txt")
	if err != nil {
		t.Fatal(err)
	}
	var xs []float64
	for _, f := range strings.Fields(string(b)) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatal(err)
		}
		xs = append(xs, v)
	}
	steps, err := changepoint.Detect(xs, changepoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var at []int
	for _, s := range steps {
		at = append(at, s.Index)
	}
	if !slices.Equal(at, []int{15, 61, 71, 95}) {
		t.Fatalf("steps at %v (%+v), want 15, 61, 71, 95", at, steps)
	}
	if d := float64(steps[0].DeltaPct); d > -11 || d < -13 {
		t.Errorf("step at 15: %+.1f%%, want about −12%% (the outlier left out of the level)", d)
	}
	if d := float64(steps[2].DeltaPct); d < 15 {
		t.Errorf("largest step at 71: %+.1f%%, want about +16%%", d)
	}
}

// TestChangepointDrift: a slow drift of 3σ over the series, with
// independent or autocorrelated noise, is not a ladder of steps.
func TestChangepointDrift(t *testing.T) {
	for _, tc := range []struct {
		phi              float64
		maxTotal, maxOne int
	}{
		// The study: about 0.1 and 0.2 steps per series of drifts of 1σ
		// to 3σ at φ 0 and 0.5 (the old detector: 0.50 and 1.93); 3σ is
		// the steepest, and here 2 and 12 steps were found in 30 series.
		// Wanted: fewer than one step in two series, and no series cut
		// into a ladder of three or more.
		{0, 15, 2},
		{0.5, 15, 2},
	} {
		r := rand.New(rand.NewPCG(11, 5))
		total, most := 0, 0
		for range 30 {
			s := cpstudy.Generate(r, cpstudy.Stationary, 200, tc.phi)
			for i := range s.Values {
				s.Values[i] += 3 * cpstudy.Sigma * float64(i) / 199
			}
			steps, err := changepoint.Detect(s.Values, changepoint.Options{})
			if err != nil {
				t.Fatal(err)
			}
			total += len(steps)
			most = max(most, len(steps))
		}
		if total > tc.maxTotal || most > tc.maxOne {
			t.Errorf("φ %g: %d steps in 30 drifting series, up to %d in one; want at most %d and %d", tc.phi, total, most, tc.maxTotal, tc.maxOne)
		}
	}
}

// TestChangepointEffectFloor: a step of 0.8σ over 200 points a side is
// significant, but below the default floor of one standard deviation; a
// negative MinEffect reports it.
func TestChangepointEffectFloor(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 2))
	xs := make([]float64, 400)
	for i := range xs {
		xs[i] = 100 + r.NormFloat64()
		if i >= 200 {
			xs[i] += 0.8
		}
	}
	for _, tc := range []struct {
		minEffect float64
		want      int
	}{{0, 0}, {-1, 1}, {0.5, 1}} {
		steps, err := changepoint.Detect(xs, changepoint.Options{MinEffect: tc.minEffect})
		if err != nil || len(steps) != tc.want {
			t.Errorf("min effect %g: steps %+v, %v; want %d", tc.minEffect, steps, err, tc.want)
		}
	}
}
