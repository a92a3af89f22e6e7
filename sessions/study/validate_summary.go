package study

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
)

// summarizeValidation judges the finished experiments of a validation:
// the metric, then each experiment's verdict (tallied by validationTally),
// then the A/A false-positive rate, the power on the known effect, the
// arms' spread, the drift with trial number and the other metrics' rates.
func summarizeValidation(cfg ValidateConfig, opt analysis.Options, specs []runSpec, data []*runData) (*Validation, error) {
	infos, names, firstErr := validationMetrics(data)
	if len(names) == 0 {
		if firstErr != nil {
			return nil, fmt.Errorf("validate: no experiment completed; first error: %w", firstErr)
		}
		return nil, errors.New("validate: no trial reported any metric")
	}
	metric, err := pickMetric(cfg.Metric, cfg.Experiment, names)
	if err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	t := newValidationTally(cfg, opt, metric, infos, names)
	for i, d := range data {
		if finished(d) {
			t.add(specs[i].phase, d)
		}
	}
	v := t.v
	if v.AA.Experiments == 0 {
		return nil, fmt.Errorf("validate: no A/A experiment completed; first error: %v", firstErr)
	}
	if v.AA.Failed > 0 || v.Effect.Failed > 0 {
		v.Warnings = append(v.Warnings, fmt.Sprintf("%d A/A and %d effect experiments did not complete and are left out (first error: %v)",
			v.AA.Failed, v.Effect.Failed, firstErr))
	}
	t.judgeAA()
	t.judgeEffect(cfg.EffectPct)
	v.Variance = VarianceStats{Control: pool(t.ctlVar), Treatment: pool(t.trVar)}
	t.trialTrend()
	t.otherMetrics()
	return v, nil
}

// validationMetrics gathers the metrics of the finished experiments, in
// first-seen order, and the first error of one that failed.
func validationMetrics(data []*runData) (infos map[string]metricInfo, names []string, firstErr error) {
	infos = map[string]metricInfo{}
	for _, d := range data {
		if !finished(d) {
			continue
		}
		if d.err == nil {
			d.metrics(infos, &names)
		} else if firstErr == nil {
			firstErr = d.err
		}
	}
	return infos, names, firstErr
}

// familyInputs is the run's inputs as run analyses them: first the metric
// judged, then every other metric (one family for the correction).
func familyInputs(d *runData, first analysis.MetricInput, infos map[string]metricInfo, names []string) []analysis.MetricInput {
	inputs := []analysis.MetricInput{first}
	for _, n := range names {
		if n != first.Name {
			inputs = append(inputs, d.input(n, infos[n]))
		}
	}
	return inputs
}

// validationTally is a validation being judged: the Validation filled as
// experiments are tallied, and what its rates, spreads and trend are
// computed from afterwards.
type validationTally struct {
	v      *Validation
	opt    analysis.Options
	metric string
	info   metricInfo
	infos  map[string]metricInfo
	names  []string
	want   string // the verdict the known effect should produce

	otherFP         map[string]*MetricRate // the other metrics' A/A false positives
	ctlVar, trVar   []armStats             // each A/A experiment's spread per arm
	byPos           [][]float64            // A/A values by trial position, over each run's mean
	observed        []float64              // each effect experiment's observed change in %
	aaUsed, effUsed []float64              // trials per arm each experiment used
}

// newValidationTally starts the Validation of metric: what was run, with
// which test, and which verdict the effect should produce (a higher value
// is a regression when lower is better).
func newValidationTally(cfg ValidateConfig, opt analysis.Options, metric string, infos map[string]metricInfo, names []string) *validationTally {
	exp := cfg.Experiment
	info := infos[metric]
	v := &Validation{
		Device: strings.Join(exp.DeviceList(), ","), Metric: metric, Unit: info.unit, Better: info.better, Test: opt.Test,
		Alpha: opt.Alpha, Confidence: opt.Confidence, TrialsPerArm: exp.TrialCap(), Order: exp.Order, Stop: lab.StopFixed,
		Warnings: []string{},
	}
	if exp.Stop == lab.StopAuto {
		v.Stop = lab.StopAuto
		v.Test = "anytime-valid"
		if v.calibrated() {
			v.Test = fmt.Sprintf("group-sequential over %d rounds", v.TrialsPerArm)
		}
	}
	v.Effect.EffectPct = cfg.EffectPct
	v.Effect.Injected = cfg.Inject
	want := analysis.VerdictRegression
	if (cfg.EffectPct > 0) != (info.better != analysis.BetterHigher) {
		want = analysis.VerdictImprovement
	}
	return &validationTally{v: v, opt: opt, metric: metric, info: info, infos: infos, names: names, want: want,
		otherFP: map[string]*MetricRate{}}
}

// significant reports whether a verdict claims a change.
func significant(verdict string) bool {
	return verdict == analysis.VerdictRegression || verdict == analysis.VerdictImprovement
}

// add tallies one finished experiment of phase ("aa" or "effect").
func (t *validationTally) add(phase string, d *runData) {
	v := t.v
	if d.err != nil {
		if phase == "aa" {
			v.AA.Failed++
		} else {
			v.Effect.Failed++
		}
		return
	}
	in := d.input(t.metric, t.info)
	a, b := in.Samples[0], in.Samples[1]
	inputs := familyInputs(d, in, t.infos, t.names)
	used := float64(max(len(a), len(b)))
	if phase == "aa" {
		t.aaUsed = append(t.aaUsed, used)
	} else {
		t.effUsed = append(t.effUsed, used)
	}
	r := analysis.Compare(inputs, t.opt)
	if phase == "effect" {
		t.addEffect(r)
		return
	}
	t.addAA(r, d, a, b)
}

// addEffect tallies an effect experiment: detected, found in the wrong
// direction, and the change it observed.
func (t *validationTally) addEffect(r analysis.Report) {
	e := &t.v.Effect
	e.Experiments++
	switch verdict := r.Metrics[0].Verdict; {
	case verdict == t.want:
		e.Detected++
	case significant(verdict):
		e.Wrong++
	}
	if x := r.Metrics[0].DeltaPctMean; x.Defined() {
		t.observed = append(t.observed, float64(x))
	}
}

// addAA tallies an A/A experiment. A false positive is what run's exit
// status would report: any metric of the family significant after the
// correction; each other metric's own rate is kept too.
func (t *validationTally) addAA(r analysis.Report, d *runData, a, b []float64) {
	t.v.AA.Experiments++
	fp := false
	for _, m := range r.Metrics {
		fp = fp || significant(m.Verdict)
	}
	if fp {
		t.v.AA.FalsePositives++
	}
	for _, m := range r.Metrics[1:] {
		rate := t.otherFP[m.Name]
		if rate == nil {
			rate = &MetricRate{Metric: m.Name}
			t.otherFP[m.Name] = rate
		}
		if !m.PAdjusted.Defined() { // not testable in this run
			continue
		}
		rate.Experiments++
		if significant(m.Verdict) {
			rate.FalsePositives++
		}
	}
	t.ctlVar = append(t.ctlVar, armStatsOf(a))
	t.trVar = append(t.trVar, armStatsOf(b))
	seq := d.sequence(t.metric)
	if mu := mean(seq); mu != 0 && !math.IsNaN(mu) {
		for k, x := range seq {
			if k == len(t.byPos) {
				t.byPos = append(t.byPos, nil)
			}
			t.byPos[k] = append(t.byPos[k], x/mu)
		}
	}
}

// judgeAA gives the A/A false-positive rate with its interval, and warns
// when it excludes alpha, when the family counts several metrics, and when
// there are too few experiments to judge alpha.
func (t *validationTally) judgeAA() {
	v, opt := t.v, t.opt
	v.AA.Trials, v.Effect.Trials = trialsUsedOf(t.aaUsed), trialsUsedOf(t.effUsed)
	aaRate, _ := analysis.BinomialCI(v.AA.FalsePositives, v.AA.Experiments, opt.Confidence)
	v.AA.Rate, v.AA.CILow, v.AA.CIHigh = aaRate.Rate, aaRate.CILow, aaRate.CIHigh
	if aaRate.Excludes(opt.Alpha) && (v.Stop != lab.StopAuto || v.calibrated() || float64(aaRate.CILow) > opt.Alpha) {
		v.Warnings = append(v.Warnings, fmt.Sprintf(
			"the A/A false-positive rate %.1f%% (%.0f%% CI %.1f–%.1f%%) excludes α = %g%%: on this setup the %s test does not keep its promise; trials are probably not independent and identically distributed (see the trial trend, and try more controls or random order)",
			100*float64(aaRate.Rate), 100*opt.Confidence, 100*float64(aaRate.CILow), 100*float64(aaRate.CIHigh), 100*opt.Alpha, opt.Test))
	}
	if len(t.names) > 1 && opt.Correction != analysis.CorrectionNone {
		v.Warnings = append(v.Warnings, fmt.Sprintf(
			"the A/A false positives count experiments in which any of the %d metrics was significant after %s's correction, as run's exit status would",
			len(t.names), opt.Correction))
	}
	inflatedOnly := v.Stop == lab.StopAuto && !v.calibrated()
	if need := analysis.ExperimentsToJudgeAlpha(opt.Alpha, opt.Confidence, inflatedOnly); v.AA.Experiments < need {
		pw, cons := analysis.AlphaPower(v.AA.Experiments, opt.Alpha, opt.Confidence)
		what := fmt.Sprintf("they detect a test wrong twice as often as promised (%g%%) only %.0f%% of the time", 200*opt.Alpha, 100*pw)
		if !cons && !inflatedOnly {
			what += " and can never flag a conservative one"
		}
		v.Warnings = append(v.Warnings, fmt.Sprintf(
			"too few experiments to judge: %d A/A experiments cannot judge α = %g%%: %s; use --aa %d or more for %.0f%% power (exact binomial test, Chernick & Liu 2002)",
			v.AA.Experiments, 100*opt.Alpha, what, need, 100*analysis.PowerTarget))
	}
}

// judgeEffect gives the detection rate of the known effect with its
// interval and the mean observed change, and warns when the power falls
// short of the target or an experiment found the wrong direction.
func (t *validationTally) judgeEffect(effectPct float64) {
	v, opt := t.v, t.opt
	v.Effect.Rate, v.Effect.CILow, v.Effect.CIHigh = analysis.Float(math.NaN()), analysis.Float(math.NaN()), analysis.Float(math.NaN())
	v.Effect.ObservedPct = analysis.Float(math.NaN())
	if v.Effect.Experiments == 0 {
		return
	}
	er, _ := analysis.BinomialCI(v.Effect.Detected, v.Effect.Experiments, opt.Confidence)
	v.Effect.Rate, v.Effect.CILow, v.Effect.CIHigh = er.Rate, er.CILow, er.CIHigh
	if len(t.observed) > 0 {
		v.Effect.ObservedPct = analysis.Float(mean(t.observed))
	}
	if float64(er.Rate) < analysis.PowerTarget {
		v.Warnings = append(v.Warnings, fmt.Sprintf(
			"a %+g%% effect was detected in only %.0f%% of experiments (below %.0f%% power): use more trials per arm or reduce noise",
			effectPct, 100*float64(er.Rate), 100*analysis.PowerTarget))
	}
	if v.Effect.Wrong > 0 {
		v.Warnings = append(v.Warnings, fmt.Sprintf("%d effect experiments found a significant change in the wrong direction", v.Effect.Wrong))
	}
}

// trialTrend gives the mean A/A value by trial position and its Spearman
// trend, warning when the metric drifts with trial number.
func (t *validationTally) trialTrend() {
	v, opt := t.v, t.opt
	v.TrialTrend = TrialTrend{Rho: analysis.Float(math.NaN()), P: analysis.Float(math.NaN()), Means: []analysis.Float{}}
	var means []float64
	for _, xs := range t.byPos {
		// Positions reached by fewer than half the experiments (failed
		// trials make runs uneven) would add noise, not information.
		if 2*len(xs) < v.AA.Experiments {
			break
		}
		means = append(means, mean(xs))
		v.TrialTrend.Means = append(v.TrialTrend.Means, analysis.Float(mean(xs)))
	}
	if c, _ := analysis.SpearmanTrend(means); c.Rho.Defined() {
		v.TrialTrend.Rho, v.TrialTrend.P = c.Rho, c.P
		if float64(c.P) < opt.Alpha {
			v.Warnings = append(v.Warnings, fmt.Sprintf(
				"the metric drifts with trial number (Spearman ρ = %.2f, p = %s): trials are not identically distributed over a run",
				float64(c.Rho), analysis.FormatP(float64(c.P), opt.Alpha, 3)))
		}
	}
}

// otherMetrics gives the A/A false-positive rate of each other metric that
// could be tested, in first-seen order.
func (t *validationTally) otherMetrics() {
	for _, n := range t.names {
		if fp := t.otherFP[n]; fp != nil && fp.Experiments > 0 {
			fp.Rate = analysis.Float(float64(fp.FalsePositives) / float64(fp.Experiments))
			t.v.OtherMetrics = append(t.v.OtherMetrics, *fp)
		}
	}
}
