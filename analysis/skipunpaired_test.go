package analysis

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// skipInputs are metrics as a session of /bin/true gives them: wall time
// (positive), user time with a few 0 ms, system time mostly 0 ms, plus a
// metric of both signs and one of an odd number of pairs; every one paired
// (rounds of alternate order), and one unpaired metric.
func skipInputs(seed uint64) []MetricInput {
	rng := rand.New(rand.NewPCG(seed, 5))
	metric := func(name string, n int, value func() float64, paired bool) MetricInput {
		in := MetricInput{Name: name, Unit: "ms", Samples: [][]float64{make([]float64, n), make([]float64, n)}}
		for i := range n {
			a, b := value(), value()
			in.Samples[0][i], in.Samples[1][i] = a, b
			if paired {
				in.Pairs = append(in.Pairs, Pair{A: a, B: b})
			}
		}
		return in
	}
	zeroOr := func(p float64, v float64) float64 {
		if rng.Float64() < p {
			return 0
		}
		return v
	}
	return []MetricInput{
		metric("wall_ms", 500, func() float64 { return 0.55 * math.Exp(0.1*rng.NormFloat64()) }, true),
		metric("user_ms", 500, func() float64 { return zeroOr(0.07, 0.495+0.001*float64(rng.IntN(3))) }, true),
		metric("sys_ms", 500, func() float64 { return zeroOr(0.93, 0.4) }, true),
		metric("shift", 301, func() float64 { return rng.NormFloat64() }, true),
		metric("unpaired", 200, func() float64 { return 10 + rng.NormFloat64() }, false),
	}
}

// TestSkipUnpairedEstimates: with Options.SkipUnpairedEstimates the
// bootstrap of the median difference, the unpaired Hodges–Lehmann shift
// and the unpaired MDE are left undefined exactly for the paired metrics; everything
// else (warnings included) and the rendered table are as without it.
func TestSkipUnpairedEstimates(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			in := skipInputs(seed)
			opt := DefaultOptions()
			opt.Labels = []string{"control", "treatment"}
			full := Compare(in, opt)
			opt.SkipUnpairedEstimates = true
			lean := Compare(in, opt)
			if got, want := Table(lean), Table(full); got != want {
				t.Errorf("table differs with SkipUnpairedEstimates:\n%s\nwithout:\n%s", got, want)
			}
			for i, m := range lean.Metrics {
				f := full.Metrics[i]
				paired := len(in[i].Pairs) > 0
				skipped := m.Bootstrap.Resamples == 0 && !m.Bootstrap.Point.Defined() && !m.Bootstrap.Low.Defined() &&
					!m.Bootstrap.High.Defined() && !m.Bootstrap.SE.Defined() && !m.Bootstrap.PctLow.Defined() &&
					!m.Bootstrap.PctHigh.Defined() && !m.HodgesLehmann.Defined() && !m.MDEPct.Defined()
				if skipped != paired {
					t.Errorf("%s: skipped %v, want %v (paired): %+v, HL %v", m.Name, skipped, paired, m.Bootstrap, m.HodgesLehmann)
				}
				if f.Bootstrap.Resamples != opt.Resamples || !f.Bootstrap.Point.Defined() || !f.HodgesLehmann.Defined() || !f.MDEPct.Defined() {
					t.Errorf("%s: the full analysis left out the bootstrap, HL or MDE: %+v, HL %v, MDE %v", f.Name, f.Bootstrap, f.HodgesLehmann, f.MDEPct)
				}
				// Everything else is the same, warnings included.
				if paired {
					f.Bootstrap, f.HodgesLehmann, f.MDEPct = m.Bootstrap, m.HodgesLehmann, m.MDEPct
				}
				if got, want := jsonOf(t, m), jsonOf(t, f); got != want {
					t.Errorf("%s differs beyond the skipped estimates:\n%s\nwant\n%s", m.Name, got, want)
				}
			}
			if got, want := jsonOf(t, lean.Warnings), jsonOf(t, full.Warnings); got != want {
				t.Errorf("report warnings %s, want %s", got, want)
			}
			// The inputs exercise both outcomes of the bootstrap's only
			// data-dependent warning.
			if !slices.Contains(lean.Metrics[2].Warnings, warnPctUndefined) || slices.Contains(lean.Metrics[1].Warnings, warnPctUndefined) {
				t.Errorf("sys_ms should warn of undefined relative bootstrap intervals, user_ms not: %q, %q",
					lean.Metrics[2].Warnings, lean.Metrics[1].Warnings)
			}
		})
	}
}

// TestSkipUnpairedEstimatesVersus: the same for three builds.
func TestSkipUnpairedEstimatesVersus(t *testing.T) {
	in := skipInputs(4)
	for i := range in {
		in[i].Samples = append(in[i].Samples, in[i].Samples[1])
		in[i].MorePairs = [][]Pair{in[i].Pairs}
	}
	opt := DefaultOptions()
	full := CompareVersus(in, opt)
	opt.SkipUnpairedEstimates = true
	lean := CompareVersus(in, opt)
	if got, want := VersusTable(lean), VersusTable(full); got != want {
		t.Errorf("table differs with SkipUnpairedEstimates:\n%s\nwithout:\n%s", got, want)
	}
	if b := lean.Comparisons[1].Metrics[0].Bootstrap; b.Resamples != 0 || b.Low.Defined() {
		t.Errorf("C vs A, paired: bootstrap computed: %+v", b)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBootstrapScaledWarnings: the warnings without the interval are
// bootstrapScaled's, on samples where resampled medians of A are 0 often,
// rarely (zeros just below the middle) or never, of both signs, odd and
// even sizes; both outcomes occur.
func TestBootstrapScaledWarnings(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var warned, clean int
	for i := range 300 {
		na, nb := 2+rng.IntN(60), 2+rng.IntN(60)
		zeros := rng.IntN(na + 1) // how many of A are 0
		sign := 1.0
		if i%7 == 0 {
			sign = -1 // A of both signs: the draws are judged in full
		}
		a, b := make([]float64, na), make([]float64, nb)
		for j := range a {
			if j >= zeros {
				a[j] = 1 + rng.Float64()
				if rng.IntN(4) == 0 {
					a[j] *= sign
				}
			}
		}
		for j := range b {
			b[j] = rng.Float64() * 3
		}
		sortFloats(a)
		sortFloats(b)
		resamples := 2 + rng.IntN(5000)
		seed := rng.Uint64()
		_, want := bootstrapScaled(a, b, 1, 0.95, resamples, seed, orderStatMedian)
		got := bootstrapScaledWarnings(a, b, resamples, seed)
		if !slices.Equal(got, want) {
			t.Fatalf("A %v, B %v, %d resamples, seed %d: warnings %q, bootstrapScaled gives %q", a, b, resamples, seed, got, want)
		}
		if len(want) > 0 {
			warned++
		} else {
			clean++
		}
	}
	if warned < 20 || clean < 20 {
		t.Errorf("%d cases warned and %d did not: the cases do not test both outcomes", warned, clean)
	}
}

// TestOrderStatBelow: orderStatBelow consumes the stream as
// orderStatMedian does, and tells when its median is made of the first z
// values only (here the zeros).
func TestOrderStatBelow(t *testing.T) {
	for _, n := range []int{2, 3, 10, 11, 500, 501} {
		for z := 0; z <= n; z += max(1, n/7) {
			xs := make([]float64, n) // z zeros, then ones
			for i := z; i < n; i++ {
				xs[i] = 1
			}
			s1, s2 := rand.NewPCG(uint64(n), uint64(z)), rand.NewPCG(uint64(n), uint64(z))
			r1, r2 := rand.New(s1), rand.New(s2)
			for range 200 {
				med := orderStatMedian(xs, r1, s1, nil)
				below := orderStatBelow(n, z, r2, s2)
				if want := med == 0; below != want {
					t.Fatalf("n %d, z %d: below %v, median %v", n, z, below, med)
				}
			}
			if a, b := s1.Uint64(), s2.Uint64(); a != b {
				t.Fatalf("n %d, z %d: the streams part (%d, %d)", n, z, a, b)
			}
		}
	}
}

// TestPctAlwaysFinite: the bounds that let the bootstrap's warning be
// decided without drawing.
func TestPctAlwaysFinite(t *testing.T) {
	for _, c := range []struct {
		a, b []float64
		want bool
	}{
		{[]float64{1, 2}, []float64{3, 4}, true},
		{[]float64{-2, -1}, []float64{3, 4}, true},
		{[]float64{0, 2}, []float64{3, 4}, false},
		{[]float64{-1, 2}, []float64{3, 4}, false},
		{[]float64{1e-301, 2}, []float64{3, 4}, false},
		{[]float64{1e-200, 1e200}, []float64{3, 4}, false},
		{[]float64{1, 2}, []float64{3, math.Inf(1)}, false},
		{[]float64{1, math.NaN()}, []float64{3, 4}, false},
	} {
		if got := pctAlwaysFinite(c.a, c.b); got != c.want {
			t.Errorf("pctAlwaysFinite(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
