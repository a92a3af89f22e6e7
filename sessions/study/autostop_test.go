package study

import (
	"context"
	"math"
	"testing"

	"gonum.org/v1/gonum/mathext"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/internal/calibration"
	"github.com/perflab/perflab/lab"
)

// TestValidateStopAutoOnSim is the end-to-end check of stop auto on the
// simulated phone with every control on (deterministic seeds): with a look
// after every round and max_trials 40, the A/A false-positive rate lies
// inside the 95% binomial band around α (with 400 experiments on both
// sides: the group-sequential rule spends α, it is not merely below it),
// and a +1% change is detected in ≥ 80% of the effect experiments using
// fewer trials per arm on average than the fixed-n paired t-test of equal
// power (from the normal approximation with the measured per-trial noise).
// The test runs 40 A/A and 20 effect experiments (seeded); the full study
// of 400 and 100, whose figures README.md quotes, runs with
// bench/calibration.sh. The many-experiment check of the rule itself is
// analysis's TestSequentialAAFalsePositives.
func TestValidateStopAutoOnSim(t *testing.T) {
	const maxTrials = 40
	aa, eff := calibration.Size(40, 400), calibration.Size(20, 100)
	exp := feedExperiment(maxTrials, controlsOn())
	exp.Stop, exp.MaxTrials = lab.StopAuto, maxTrials
	v, err := Validate(context.Background(), ValidateConfig{
		Experiment: exp, Devices: simDevices("pixel"), AA: aa, EffectPct: 1, EffectRuns: eff, Inject: true,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := analysis.BinomialRange(aa, 0.05, 0.95)
	// Fixed-n paired design of the same power: n = ((z_{1−α/2} + z_power)·sd/Δ)²
	// with sd the per-round log-ratio SD (√2 × the per-trial CV).
	power := math.Min(float64(v.Effect.Rate), 0.999)
	sd := math.Sqrt2 * float64(v.Variance.Control.CV)
	zs := -mathext.NormalQuantile(0.025) + mathext.NormalQuantile(power)
	fixedN := math.Ceil(math.Pow(zs*sd/math.Log(1.01), 2))
	t.Logf("stop auto, max %d: A/A %d/%d false positives (band %d–%d), trials per arm mean %.1f; +1%%: %d/%d detected, trials per arm mean %.1f p90 %.0f; fixed-n of equal power ≈ %.0f; method %q",
		maxTrials, v.AA.FalsePositives, v.AA.Experiments, lo, hi, float64(v.AA.Trials.Mean),
		v.Effect.Detected, v.Effect.Experiments, float64(v.Effect.Trials.Mean), float64(v.Effect.Trials.P90), fixedN, v.Test)
	if v.AA.Experiments != aa || v.Effect.Experiments != eff {
		t.Fatalf("experiments %d A/A, %d effect", v.AA.Experiments, v.Effect.Experiments)
	}
	if v.AA.FalsePositives < lo || v.AA.FalsePositives > hi {
		t.Errorf("A/A false positives %d of %d outside the band %d–%d", v.AA.FalsePositives, aa, lo, hi)
	}
	if v.AlphaJudgement() != (analysis.Proportion{N: v.AA.Experiments, CILow: v.AA.CILow, CIHigh: v.AA.CIHigh}).JudgeAlpha(v.Alpha, v.Confidence) {
		t.Errorf("a calibrated rule should be judged two-sided: %s", v.AlphaJudgement())
	}
	if float64(v.Effect.Rate) < 0.8 {
		t.Errorf("+1%% detected in %.0f%%, want ≥ 80%%", 100*float64(v.Effect.Rate))
	}
	if m := float64(v.Effect.Trials.Mean); !(m < fixedN) {
		t.Errorf("auto stop used %.1f trials per arm on average, the fixed design of equal power %.0f", m, fixedN)
	}
}
