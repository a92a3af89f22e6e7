package study

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/engine"
)

// ValidateConfig configures a validation study.
type ValidateConfig struct {
	Experiment *lab.Experiment // the setup under validation: device, builds, trials, order, controls
	Devices    Devices
	// AA is the number of A/A experiments (control against itself).
	AA int
	// EffectPct is the size of the known effect, in % of the metric; 0
	// runs no effect experiments.
	EffectPct float64
	// Inject makes the treatment a copy of the control whose simulated
	// cost is EffectPct higher (the simulated phone knows the truth).
	// Without it the experiment's own treatment is used and EffectPct is
	// the difference the user declares it has.
	Inject bool
	// EffectRuns is the number of effect experiments (default AA).
	EffectRuns int
	// Metric is the metric judged (default: the experiment's first).
	Metric string
	// Test is the primary test, "mann-whitney" (default) or "welch".
	Test string
}

// Defaults of a validation study: many cheap experiments on the simulated
// phone, a handful on real hardware where each costs minutes.
const (
	DefaultAASim     = 240 // ≥ analysis.ExperimentsToJudgeAlpha(0.05, 0.95): 234
	DefaultAAReal    = 20
	DefaultEffectSim = 1.0 // % injected on the simulated phone when no effect is given
)

// NewValidateConfig is a validation study of exp with the defaults perflab
// validate and the workbench share: aa A/A experiments (DefaultAASim or
// DefaultAAReal when 0); on the simulated phone (devs.SimTime) the effect is injected
// (DefaultEffectSim unless effectGiven), elsewhere effectPct is declared.
func NewValidateConfig(exp *lab.Experiment, devs Devices, aa int, effectPct float64, effectGiven bool) ValidateConfig {
	sim := devs.SimTime
	cfg := ValidateConfig{Experiment: exp, Devices: devs, AA: aa, Inject: sim, EffectPct: effectPct}
	if cfg.AA == 0 {
		cfg.AA = DefaultAAReal
		if sim {
			cfg.AA = DefaultAASim
		}
	}
	if !effectGiven && sim {
		cfg.EffectPct = DefaultEffectSim
	}
	return cfg
}

// Validation is the result of a validation study.
type Validation struct {
	Device       string  `json:"device"`
	Metric       string  `json:"metric"`
	Unit         string  `json:"unit"`
	Better       string  `json:"better"`
	Test         string  `json:"test"`
	Alpha        float64 `json:"alpha"`
	Confidence   float64 `json:"confidence"`
	TrialsPerArm int     `json:"trials_per_arm"` // the cap with stop "auto"
	Order        string  `json:"order"`
	Stop         string  `json:"stop"` // "fixed" or "auto" (sequential, stops when decided)

	AA         RateResult    `json:"aa"`
	Effect     EffectResult  `json:"effect"`
	Variance   VarianceStats `json:"variance"`
	TrialTrend TrialTrend    `json:"trial_trend"`
	// OtherMetrics gives the A/A false-positive rate of every other metric.
	OtherMetrics []MetricRate `json:"other_metrics,omitempty"`
	Warnings     []string     `json:"warnings"`
	Partial      bool         `json:"partial,omitempty"` // cancelled: covers the experiments that finished
}

// RateResult is the A/A false-positive rate with its Clopper–Pearson CI.
type RateResult struct {
	Experiments    int            `json:"experiments"` // completed experiments
	FalsePositives int            `json:"false_positives"`
	Rate           analysis.Float `json:"rate"`
	CILow          analysis.Float `json:"ci_low"`
	CIHigh         analysis.Float `json:"ci_high"`
	Failed         int            `json:"failed"` // experiments that did not complete
	Trials         TrialsUsed     `json:"trials_used"`
}

// TrialsUsed is how many counted trials per arm the experiments took: with
// "stop": "auto" fewer than the cap when they decided early.
type TrialsUsed struct {
	Mean analysis.Float `json:"mean"`
	P90  analysis.Float `json:"p90"`
}

func trialsUsedOf(xs []float64) TrialsUsed {
	if len(xs) == 0 {
		return TrialsUsed{Mean: analysis.Float(math.NaN()), P90: analysis.Float(math.NaN())}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	// Type-7 quantile (numpy's default).
	h := 0.9 * float64(len(s)-1)
	i := int(h)
	p90 := s[i]
	if i+1 < len(s) {
		p90 += (h - float64(i)) * (s[i+1] - s[i])
	}
	return TrialsUsed{Mean: analysis.Float(mean(s)), P90: analysis.Float(p90)}
}

// EffectResult is the detection rate of the known effect.
type EffectResult struct {
	Experiments int            `json:"experiments"`
	EffectPct   float64        `json:"effect_pct"`
	Injected    bool           `json:"injected"`
	Detected    int            `json:"detected"` // significant, in the effect's direction
	Wrong       int            `json:"wrong"`    // significant, in the opposite direction
	Rate        analysis.Float `json:"rate"`
	CILow       analysis.Float `json:"ci_low"`
	CIHigh      analysis.Float `json:"ci_high"`
	Failed      int            `json:"failed"`
	// ObservedPct is the mean relative difference of means seen.
	ObservedPct analysis.Float `json:"observed_pct"`
	Trials      TrialsUsed     `json:"trials_used"`
}

// ArmVariance is the spread of one arm within A/A experiments, averaged
// over experiments.
type ArmVariance struct {
	Mean     analysis.Float `json:"mean"`
	Variance analysis.Float `json:"variance"` // mean within-experiment sample variance
	SD       analysis.Float `json:"sd"`       // its square root
	CV       analysis.Float `json:"cv"`       // mean within-experiment CV
}

// VarianceStats is the variance of each arm of the A/A experiments.
type VarianceStats struct {
	Control   ArmVariance `json:"control"`
	Treatment ArmVariance `json:"treatment"`
}

// TrialTrend is MobileLab's "average metric value by trial number across
// experiments": Means[k] is the mean, over A/A experiments, of the k-th
// counted trial's value relative to its experiment's mean; Rho and P are
// Spearman's correlation of Means with k. With IID trials there is none.
type TrialTrend struct {
	Rho   analysis.Float   `json:"rho"`
	P     analysis.Float   `json:"p"`
	Means []analysis.Float `json:"means"`
}

// MetricRate is the A/A false-positive rate of one metric.
type MetricRate struct {
	Metric         string         `json:"metric"`
	Experiments    int            `json:"experiments"`
	FalsePositives int            `json:"false_positives"`
	Rate           analysis.Float `json:"rate"`
}

// analysisOptions are the per-experiment analysis settings: those of run
// (engine.Options: the family rule of analysis/family.go, the primary
// metric at the full alpha, Holm's correction across the others) with
// the verdict rule of run and report, whose interval must agree with the test: the
// bootstrap keeps 2,000 resamples (each is O(1), see
// analysis.BootstrapMedianDiff).
func analysisOptions(exp *lab.Experiment, test string) analysis.Options {
	o := engine.Options(exp)
	if test != "" {
		o.Test = test
	}
	o.Resamples = 2000
	return o
}

// Validate runs the validation study. progress, if not nil, is called after
// every experiment. When ctx is cancelled it returns the result of the
// experiments that finished (marked Partial) together with ctx's error.
func Validate(ctx context.Context, cfg ValidateConfig, progress func(Progress)) (*Validation, error) {
	exp := cfg.Experiment
	if exp == nil || cfg.Devices.Open == nil {
		return nil, errors.New("validate: experiment and device opener are required")
	}
	if cfg.AA < 1 {
		return nil, fmt.Errorf("validate: %d A/A experiments: want at least 1", cfg.AA)
	}
	if math.IsNaN(cfg.EffectPct) || math.IsInf(cfg.EffectPct, 0) || cfg.EffectPct <= -100 {
		return nil, fmt.Errorf("validate: effect %v%%: want a finite percentage above -100", cfg.EffectPct)
	}
	opt := analysisOptions(exp, cfg.Test)
	if err := opt.Validate(); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	nEff := 0
	if cfg.EffectPct != 0 {
		nEff = cfg.EffectRuns
		if nEff <= 0 {
			nEff = cfg.AA
		}
	}

	var specs []runSpec
	aa := clone(exp)
	ctl := aa.Builds[lab.ArmControl]
	twin := ctl
	twin.Name = buildLabel(ctl, lab.ArmControl) + " (A/A twin)"
	aa.Builds[lab.ArmTreatment] = twin
	for i := 0; i < cfg.AA; i++ {
		e := clone(aa)
		e.Seed = seedFor(exp.Seed, "aa", i)
		specs = append(specs, runSpec{phase: "aa", index: i, seed: e.Seed, exp: e})
	}
	eff := clone(exp)
	if cfg.Inject {
		tr := ctl
		tr.EffectPct = ctl.EffectPct + cfg.EffectPct
		tr.Name = fmt.Sprintf("%s %+g%%", buildLabel(ctl, lab.ArmControl), cfg.EffectPct)
		eff.Builds[lab.ArmTreatment] = tr
	}
	for i := 0; i < nEff; i++ {
		e := clone(eff)
		e.Seed = seedFor(exp.Seed, "effect", i)
		specs = append(specs, runSpec{phase: "effect", index: i, seed: e.Seed, exp: e})
	}

	// Each run is analysed as it finishes; the data is kept for the
	// cross-experiment statistics.
	data, err := collect(ctx, "validate", cfg.Devices, specs, exp, cfg.Metric, opt, progress)
	if err != nil {
		if done := finishedRuns(data); done > 0 && ctx.Err() != nil {
			v, serr := summarizeValidation(cfg, opt, specs, data)
			if serr == nil {
				v.Partial = true
				v.Warnings = append(v.Warnings, fmt.Sprintf("cancelled: the result covers the %d of %d experiments that finished", done, len(specs)))
				return v, err
			}
		}
		return nil, err
	}
	return summarizeValidation(cfg, opt, specs, data)
}

// ValidateStream runs Validate in the background. The channel carries a
// Progress after every experiment and, last, the result or the error; it
// is closed after that.
func ValidateStream(ctx context.Context, cfg ValidateConfig) <-chan Update {
	return stream(ctx, func(progress func(Progress)) Update {
		v, err := Validate(ctx, cfg, progress)
		return Update{Validation: v, Err: err}
	})
}

// Failed reports whether the setup failed validation: the A/A
// false-positive interval excludes α or is too wide to judge it
// (analysis.JudgeAlpha), or a known effect was found in fewer experiments
// than analysis.PowerTarget asks (Underpowered).
func (v *Validation) Failed() bool {
	if v.AlphaJudgement() != analysis.AlphaHolds {
		return true
	}
	return v.Underpowered()
}

// Underpowered reports whether a known effect was run and detected in a
// smaller share of its experiments than analysis.PowerTarget.
func (v *Validation) Underpowered() bool {
	return v.Effect.Experiments > 0 && float64(v.Effect.Rate) < analysis.PowerTarget
}

// PowerLabel says whether the effect experiments reached the power target:
// "≥ 80% power" or "UNDER 80% power".
func (v *Validation) PowerLabel() string {
	if v.Underpowered() {
		return fmt.Sprintf("UNDER %.0f%% power", 100*analysis.PowerTarget)
	}
	return fmt.Sprintf("≥ %.0f%% power", 100*analysis.PowerTarget)
}

// AlphaJudgement is analysis.JudgeAlpha of the A/A false-positive rate.
func (v *Validation) AlphaJudgement() string {
	p := analysis.Proportion{CILow: v.AA.CILow, CIHigh: v.AA.CIHigh}
	p.N = v.AA.Experiments
	if v.Stop == lab.StopAuto && !v.calibrated() {
		return p.JudgeAlphaAtMost(v.Alpha, v.Confidence)
	}
	return p.JudgeAlpha(v.Alpha, v.Confidence)
}

// calibrated reports whether stop auto's rule spends exactly alpha over
// the cap (the group-sequential design), so that its A/A rate should sit
// at alpha rather than below it (the uncapped t-mixture above
// analysis.MaxCalibratedRounds).
func (v *Validation) calibrated() bool {
	return v.Stop == lab.StopAuto && v.TrialsPerArm >= 2 && v.TrialsPerArm <= analysis.MaxCalibratedRounds
}

// verdictOf returns the primary test's verdict on metric for one run.
func verdictOf(d *runData, metric string, opt analysis.Options) string {
	if metric == "" {
		return analysis.VerdictInconclusive
	}
	infos := map[string]metricInfo{}
	var names []string
	d.metrics(infos, &names)
	// Every metric, as run analyses them: the correction spans them all.
	inputs := familyInputs(d, d.input(metric, infos[metric]), infos, names)
	// The metric judged is the primary (analysis/family.go), as it is
	// for the stop rule of a run that watches it.
	opt.Primary = metric
	r := analysis.Compare(inputs, opt)
	return r.Metrics[0].Verdict
}

// armStats is one arm's spread in one experiment.
type armStats struct{ mean, variance, cv float64 }

func armStatsOf(xs []float64) armStats {
	s := analysis.Summarize(xs)
	sd := float64(s.SD)
	return armStats{mean: float64(s.Mean), variance: sd * sd, cv: float64(s.CV)}
}

// pool averages per-experiment spreads, skipping undefined ones.
func pool(xs []armStats) ArmVariance {
	var m, v, cv []float64
	for _, x := range xs {
		if !math.IsNaN(x.mean) {
			m = append(m, x.mean)
		}
		if !math.IsNaN(x.variance) {
			v = append(v, x.variance)
		}
		if !math.IsNaN(x.cv) {
			cv = append(cv, x.cv)
		}
	}
	f := func(xs []float64) analysis.Float {
		if len(xs) == 0 {
			return analysis.Float(math.NaN())
		}
		return analysis.Float(mean(xs))
	}
	out := ArmVariance{Mean: f(m), Variance: f(v), CV: f(cv), SD: analysis.Float(math.NaN())}
	if out.Variance.Defined() {
		out.SD = analysis.Float(math.Sqrt(float64(out.Variance)))
	}
	return out
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func buildLabel(b lab.Build, key string) string {
	if b.Name != "" {
		return b.Name
	}
	return key
}
