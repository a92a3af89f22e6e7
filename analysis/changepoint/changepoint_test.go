package changepoint_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/perflab/perflab/analysis/changepoint"
	"github.com/perflab/perflab/internal/cpstudy"
)

// TestChangepointScipy checks the steps found in fixed series, and each
// step's p, before and after, against testdata/reference.json, computed
// with scipy.stats.ttest_ind(equal_var=False) by testdata/gen_reference.py.
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
				Index            int
				Before, After, P float64
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
				if !close(got.P, want.P, 1e-6) || !close(got.Before, want.Before, 1e-12) || !close(got.After, want.After, 1e-12) {
					t.Errorf("step at %d: p %g before %g after %g, scipy p %g before %g after %g",
						got.Index, got.P, got.Before, got.After, want.P, want.Before, want.After)
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

// TestChangepointConstantSegments: constant levels make Welch's test
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
// bench/changepoint_study: steps of 2σ located within ±1, spikes never a
// step, stationary series clean.
func TestChangepointSmallStudy(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 30))
	found := 0
	const reps = 40
	for range reps {
		s := cpstudy.Generate(r, cpstudy.Stationary, 200)
		at := 50 + r.IntN(100)
		for i := at; i < len(s.Values); i++ {
			s.Values[i] += 2 * cpstudy.Sigma
		}
		steps, err := changepoint.Detect(s.Values, changepoint.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(steps) == 1 && math.Abs(float64(steps[0].Index-at)) <= 1 {
			found++
		}
	}
	// A 2σ step is located within ±1 about 3 times in 4 (the study's
	// recall for 2σ, 0.73): 20 of 40 leaves room for chance but not for a
	// broken locator.
	if found < reps/2 {
		t.Errorf("one 2σ step located within ±1 in %d of %d series", found, reps)
	}
	res, err := cpstudy.Run(cpstudy.Config{Seed: 3, PerKind: 60, N: 200})
	if err != nil {
		t.Fatal(err)
	}
	if res.SpikeSteps != 0 {
		t.Errorf("%d spikes reported as a step", res.SpikeSteps)
	}
	if f := res.Found[cpstudy.Stationary] + res.Found[cpstudy.Spike]; f > 1 {
		t.Errorf("%d steps in %d stationary and spike series", f, 2*res.Config.PerKind)
	}
	if res.Precision() < 0.8 || res.Recall() < 0.8 {
		t.Errorf("precision %.3f, recall %.3f of steps ≥ 2σ, want both ≥ 0.8", res.Precision(), res.Recall())
	}
}

// TestChangepointEffectFloor: a step of 0.7σ over 100 points a side is
// significant, but below the default floor of one standard deviation; a
// negative MinEffect reports it.
func TestChangepointEffectFloor(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 2))
	xs := make([]float64, 200)
	for i := range xs {
		xs[i] = 100 + r.NormFloat64()
		if i >= 100 {
			xs[i] += 0.7
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
