package analysis

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// series builds n one-second samples from f(t) plus Gaussian noise of sd
// (a fraction of the value), with frequencies from freq(t).
func series(n int, sd float64, f func(t float64) float64, freq func(t float64) []int) []StabilitySample {
	r := rand.New(rand.NewPCG(7, 7))
	out := make([]StabilitySample, n)
	for i := range out {
		t := float64(i + 1)
		v := f(t)
		out[i] = StabilitySample{T: t, MFLOPS: v * (1 + sd*r.NormFloat64()), TempC: 40}
		if freq != nil {
			out[i].FreqKHz = freq(t)
		}
	}
	return out
}

func TestStabilityOf(t *testing.T) {
	flat := func(float64) float64 { return 9000 }
	locked := func(float64) []int { return []int{1766400, 1459200} }
	check := func(name string, s []StabilitySample, wantVerdict string, wantSteps, wantThrottle int, reasonHas string) {
		t.Helper()
		got := StabilityOf(s, DefaultStabilityOptions())
		if got.Verdict != wantVerdict || (wantSteps >= 0 && len(got.Steps) != wantSteps) || got.ThrottleEvents != wantThrottle {
			t.Errorf("%s: verdict %s, %d steps %+v, %d throttles; want %s, %d, %d (reasons %q)",
				name, got.Verdict, len(got.Steps), got.Steps, got.ThrottleEvents, wantVerdict, wantSteps, wantThrottle, got.Reasons)
		}
		if reasonHas != "" && !strings.Contains(strings.Join(got.Reasons, "; "), reasonHas) {
			t.Errorf("%s: reasons %q lack %q", name, got.Reasons, reasonHas)
		}
		if wantVerdict == "stable" && len(got.Reasons) != 0 {
			t.Errorf("%s: stable with reasons %q", name, got.Reasons)
		}
	}
	check("flat locked", series(600, 0.004, flat, locked), "stable", 0, 0, "")
	check("flat with rare dips", func() []StabilitySample {
		s := series(600, 0.004, flat, locked)
		for _, i := range []int{50, 220, 400} {
			s[i].MFLOPS *= 0.96
		}
		return s
	}(), "stable", 0, 0, "")
	check("one step down", series(600, 0.004, func(t float64) float64 {
		if t > 200 {
			return 8000
		}
		return 9000
	}, locked), "unstable", 1, 0, "step change")
	check("two steps", series(600, 0.004, func(t float64) float64 {
		switch {
		case t > 400:
			return 7600
		case t > 200:
			return 8400
		}
		return 9000
	}, locked), "unstable", 2, 0, "step change")
	check("slow drift", series(600, 0.004, func(t float64) float64 { return 9000 * (1 - 0.008*t/60) }, locked),
		"unstable", -1, 0, "per minute")
	check("noisy", series(600, 0.05, flat, locked), "unstable", 0, 0, "coefficient of variation")
	check("throttled", series(120, 0.004, flat, func(t float64) []int {
		if t > 60 {
			return []int{1766400, 2246400}
		}
		return []int{1766400, 2803200}
	}), "unstable", 0, 1, "thermal throttling")
	check("too short", series(5, 0.004, flat, locked), "unstable", 0, 0, "too few samples")
}

func TestStabilityStepLocation(t *testing.T) {
	s := series(300, 0.004, func(t float64) float64 {
		if t >= 121 {
			return 8500
		}
		return 9000
	}, nil)
	got := StabilityOf(s, DefaultStabilityOptions())
	if len(got.Steps) != 1 || got.Steps[0].Index != 120 || math.Abs(got.Steps[0].ChangePct+5.6) > 0.3 {
		t.Errorf("steps %+v, want one at index 120 of about -5.6%%", got.Steps)
	}
	if d := float64(got.DriftPctPerMin); d > -0.1 {
		t.Errorf("a step down should also show as negative drift, got %v", d)
	}
}

func TestStabilityDriftValue(t *testing.T) {
	// Exactly linear: 1% of the mean per minute.
	var s []StabilitySample
	for i := 0; i < 61; i++ {
		s = append(s, StabilitySample{T: float64(i), MFLOPS: 1000 + 10*float64(i)/60})
	}
	got := StabilityOf(s, DefaultStabilityOptions())
	want := 10.0 / 1005 * 100
	if math.Abs(float64(got.DriftPctPerMin)-want) > 1e-9 {
		t.Errorf("drift %v, want %v", got.DriftPctPerMin, want)
	}
}

func TestStabilityJSONShape(t *testing.T) {
	b, err := json.Marshal(StabilityOf(nil, StabilityOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"verdict":"unstable","mean_mflops":null,"cv":null,"drift_pct_per_min":null,"steps":[],"throttle_events":0,"reasons":["no samples"]}`
	if string(b) != want {
		t.Errorf("JSON:\n got %s\nwant %s", b, want)
	}
}
