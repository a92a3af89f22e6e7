package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/plot"
	"github.com/perflab/perflab/sessions/study"
)

const validateUsage = `Usage: perflab validate DEVICE --experiment EXP.json [--aa K] [--effect X%] [--json]

MobileLab's validation framework: proves on this very setup that the
statistics keep their promise before you trust a verdict.

It runs K A/A experiments (the control build against itself, with the
experiment's trials, order and controls) and reports the observed
false-positive rate with its exact binomial (Clopper–Pearson) interval
against α, the variance of each arm, and the mean metric by trial number
across experiments with a Spearman test for a trend (IID check). It warns
when the false-positive interval excludes α, and says "too few experiments
to judge α" with the K to use when K lacks 80% power (exact binomial test)
to find a rate of 2α or to flag a conservative test (at α = 5%: 234).
Experiments are analysed as run does (Holm across metrics).

With --effect X it also runs K experiments with an effect of X%: on sim the
treatment is the control made X% costlier (the simulated phone knows the
truth); elsewhere the experiment's own treatment is used and X is the
difference you declare it has. It reports how often the effect is found.
On sim --effect defaults to 1%.

Exit status: 0 the setup validates (false-positive interval holds α and,
with an effect, at least 80% detected); 3 it does not; 1 error.

Examples:
  perflab validate sim:pixel --experiment example:sim-controls-on
  perflab validate sim:pixel --experiment example:sim-controls-off --aa 300 --effect 1%
  perflab validate local --experiment example:local-aa --aa 20 --json
  perflab validate adb:SERIAL --experiment app.json --aa 10 --effect 5%

Manual: docs/validate-order.md

Flags:
`

// parseEffect reads "1", "1%", "+1.5%", "-2%".
func parseEffect(s string) (float64, error) {
	t := strings.TrimSuffix(strings.TrimSpace(s), "%")
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= lab.MinEffectPct {
		return 0, fmt.Errorf("--effect %q: want a percentage such as 1%% or -2.5%%", s)
	}
	if err := lab.CheckRange("--effect", v, lab.MinEffectPct, lab.MaxEffectPct); err != nil {
		return 0, err
	}
	return v, nil
}

// cmdValidate runs the validation framework.
func cmdValidate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf studyFlags
	sf.register(fs)
	aa := fs.Int("aa", 0, fmt.Sprintf("number of A/A experiments (default %d on sim, %d elsewhere)", study.DefaultAASim, study.DefaultAAReal))
	effect := fs.String("effect", "", "known effect in % (default 1% on sim; elsewhere the difference you declare the treatment has)")
	effectRuns := fs.Int("effect-runs", 0, "number of effect experiments (default: as many as --aa)")
	metric := fs.String("metric", "", "metric to judge (default: the experiment's first metric)")
	test := fs.String("test", analysis.TestMannWhitney, "primary test: mann-whitney or welch")
	stop := fs.String("stop", "", "fixed or auto: each experiment stops as soon as the sequential paired analysis decides (group-sequential, calibrated to --max-trials; overrides the file)")
	maxTrials := fs.Int("max-trials", 0, "with --stop auto: at most this many trials per arm (overrides the file; default: the trials)")
	fs.Usage = func() { fmt.Fprint(stderr, validateUsage); fs.PrintDefaults() }
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	exp, devs, err := sf.load("validate", pos, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "perflab validate:", err)
		return loadCode(err)
	}
	defer sf.close()
	if *stop != "" {
		exp.Stop = *stop
	}
	if *maxTrials != 0 {
		exp.MaxTrials = *maxTrials
	}
	if err := exp.Validate(); err != nil {
		fmt.Fprintln(stderr, "perflab validate:", err)
		return exitUsage
	}
	sim := devs.SimTime
	effectPct := 0.0
	if *effect != "" {
		if effectPct, err = parseEffect(*effect); err != nil {
			fmt.Fprintln(stderr, "perflab validate:", err)
			return exitUsage
		}
	}
	cfg := study.NewValidateConfig(exp, devs, *aa, effectPct, *effect != "")
	cfg.EffectRuns, cfg.Metric, cfg.Test = *effectRuns, *metric, *test
	if cfg.AA < 1 || *effectRuns < 0 {
		fmt.Fprintln(stderr, "perflab validate: --aa and --effect-runs want a positive number of experiments")
		return exitUsage
	}
	if err := errors.Join(lab.CheckRange("--aa", cfg.AA, 1, lab.MaxStudyRuns), lab.CheckRange("--effect-runs", *effectRuns, 0, lab.MaxStudyRuns)); err != nil {
		fmt.Fprintln(stderr, "perflab validate:", err)
		return exitUsage
	}
	if *test != analysis.TestMannWhitney && *test != analysis.TestWelch {
		fmt.Fprintf(stderr, "perflab validate: --test %q: want mann-whitney or welch\n", *test)
		return exitUsage
	}
	nEff := 0
	if cfg.EffectPct != 0 {
		nEff = cfg.AA
		if cfg.EffectRuns > 0 {
			nEff = cfg.EffectRuns
		}
	}
	trials := fmt.Sprintf("%d trials per arm", exp.Trials)
	if exp.Stop == lab.StopAuto {
		trials = fmt.Sprintf("stop auto, at most %d trials per arm", exp.TrialCap())
	}
	fmt.Fprintf(stderr, "validate %s: %d A/A + %d effect experiments of %s (+%d warm-up), order %s\n",
		strings.Join(exp.DeviceList(), ","), cfg.AA, nEff, trials, exp.Warmup, exp.Order)
	if cfg.EffectPct != 0 && !sim {
		fmt.Fprintf(stderr, "effect experiments use the experiment's treatment, declared to differ by %+g%%\n", cfg.EffectPct)
	}
	prog := newStudyProgress(stderr, sf.quiet)
	v, err := study.Validate(ctx, cfg, prog.add)
	prog.done()
	if v == nil {
		fmt.Fprintln(stderr, "perflab validate:", err)
		return exitError
	}
	return sf.finish(studyOutput{
		cmd: "validate", what: "experiments", err: err, failed: v.Failed(),
		json: func(w io.Writer) error { return writeValidationJSON(w, v) },
		text: func(w io.Writer) { writeValidation(w, v) },
		plot: func() *plot.Figure { return plot.Validation(v) },
	}, stdout, stderr)
}

// validationLine is the JSON contract of `perflab validate --json`.
type validationLine struct {
	AA struct {
		Experiments    int            `json:"experiments"`
		FalsePositives int            `json:"false_positives"`
		Rate           analysis.Float `json:"rate"`
		CILow          analysis.Float `json:"ci_low"`
		CIHigh         analysis.Float `json:"ci_high"`
	} `json:"aa"`
	Effect struct {
		Experiments int            `json:"experiments"`
		EffectPct   float64        `json:"effect_pct"`
		Detected    int            `json:"detected"`
		Rate        analysis.Float `json:"rate"`
	} `json:"effect"`
	Variance struct {
		Metric    string            `json:"metric"`
		Unit      string            `json:"unit"`
		Control   study.ArmVariance `json:"control"`
		Treatment study.ArmVariance `json:"treatment"`
	} `json:"variance"`
	TrialTrend struct {
		Rho analysis.Float `json:"rho"`
		P   analysis.Float `json:"p"`
	} `json:"trial_trend"`
	Stop string `json:"stop"`
	// TrialsUsed is the counted trials per arm the experiments took (mean
	// and 90th percentile), per phase: fewer than the cap with stop auto.
	TrialsUsed struct {
		AA     study.TrialsUsed `json:"aa"`
		Effect study.TrialsUsed `json:"effect"`
	} `json:"trials_used"`
}

func writeValidationJSON(w io.Writer, v *study.Validation) error {
	var l validationLine
	l.AA.Experiments, l.AA.FalsePositives = v.AA.Experiments, v.AA.FalsePositives
	l.AA.Rate, l.AA.CILow, l.AA.CIHigh = v.AA.Rate, v.AA.CILow, v.AA.CIHigh
	l.Effect.Experiments, l.Effect.EffectPct, l.Effect.Detected, l.Effect.Rate = v.Effect.Experiments, v.Effect.EffectPct, v.Effect.Detected, v.Effect.Rate
	l.Variance.Metric, l.Variance.Unit = v.Metric, v.Unit
	l.Variance.Control, l.Variance.Treatment = v.Variance.Control, v.Variance.Treatment
	l.TrialTrend.Rho, l.TrialTrend.P = v.TrialTrend.Rho, v.TrialTrend.P
	l.Stop, l.TrialsUsed.AA, l.TrialsUsed.Effect = v.Stop, v.AA.Trials, v.Effect.Trials
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func writeValidation(w io.Writer, v *study.Validation) {
	unit := ""
	if v.Unit != "" {
		unit = " " + v.Unit
	}
	fmt.Fprintf(w, "Validation of %s: metric %s (%s is better), %s test, α = %g, %d trials per arm, order %s\n\n",
		v.Device, v.Metric, v.Better, v.Test, v.Alpha, v.TrialsPerArm, v.Order)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	ok := v.AlphaJudgement()
	fmt.Fprintf(tw, "A/A false positives\t%d of %d\t%s\t%.0f%% CI %s–%s\t%s\n", v.AA.FalsePositives, v.AA.Experiments,
		format.Rate(v.AA.Rate), 100*v.Confidence, format.Rate(v.AA.CILow), format.Rate(v.AA.CIHigh), ok)
	if v.Effect.Experiments > 0 {
		how := "declared"
		if v.Effect.Injected {
			how = "injected"
		}
		power := v.PowerLabel()
		fmt.Fprintf(tw, "Effect %+g%% (%s) detected\t%d of %d\t%s\t%.0f%% CI %s–%s\t%s, observed Δ %+.2f%%\n", v.Effect.EffectPct, how,
			v.Effect.Detected, v.Effect.Experiments, format.Rate(v.Effect.Rate), 100*v.Confidence, format.Rate(v.Effect.CILow), format.Rate(v.Effect.CIHigh),
			power, float64(v.Effect.ObservedPct))
	} else {
		fmt.Fprintf(tw, "Effect\tnot run\t\t\t(--effect X%% runs experiments with a known effect)\n")
	}
	for _, arm := range []struct {
		name string
		a    study.ArmVariance
	}{{"control", v.Variance.Control}, {"treatment", v.Variance.Treatment}} {
		fmt.Fprintf(tw, "Variance, %s\t%s%s²\tsd %s%s\tCV %s\tmean %s%s\n", arm.name, format.Num(arm.a.Variance), unit,
			format.Num(arm.a.SD), unit, format.Rate(arm.a.CV), format.Num(arm.a.Mean), unit)
	}
	if v.Stop == lab.StopAuto {
		fmt.Fprintf(tw, "Trials per arm used (stop auto)\tA/A mean %s, p90 %s\teffect mean %s, p90 %s\tof at most %d\n",
			format.Num(v.AA.Trials.Mean), format.Num(v.AA.Trials.P90), format.Num(v.Effect.Trials.Mean), format.Num(v.Effect.Trials.P90), v.TrialsPerArm)
	}
	trend := "no trend"
	if v.TrialTrend.P.Defined() && float64(v.TrialTrend.P) < v.Alpha {
		trend = "TREND: not IID"
	}
	fmt.Fprintf(tw, "Trial-number trend\tρ = %s\tp = %s\t%d positions\t%s\n", format.Num(v.TrialTrend.Rho), format.P(v.TrialTrend.P, v.Alpha),
		len(v.TrialTrend.Means), trend)
	tw.Flush()
	if len(v.TrialTrend.Means) > 1 {
		fmt.Fprintf(w, "\nMean by trial number, relative to each experiment's mean (first trial left):\n  %s\n", sparkline(v.TrialTrend.Means))
	}
	if len(v.OtherMetrics) > 0 {
		fmt.Fprintln(w, "\nA/A false-positive rate of the other metrics:")
		for _, m := range v.OtherMetrics {
			fmt.Fprintf(w, "  %-20s %d of %d = %s\n", m.Metric, m.FalsePositives, m.Experiments, format.Rate(m.Rate))
		}
	}
	if len(v.Warnings) > 0 {
		fmt.Fprintln(w)
		for _, s := range v.Warnings {
			fmt.Fprintln(w, "warning:", s)
		}
	}
}

// sparkline draws values as a row of block characters scaled to their
// range, averaging neighbours so the row stays within 60 characters.
func sparkline(xs []analysis.Float) string {
	const blocks = "▁▂▃▄▅▆▇█"
	const width = 60
	if len(xs) > width {
		ys := make([]analysis.Float, width)
		for i := range ys {
			lo, hi := i*len(xs)/width, (i+1)*len(xs)/width
			sum, n := 0.0, 0
			for _, x := range xs[lo:hi] {
				if x.Defined() {
					sum += float64(x)
					n++
				}
			}
			ys[i] = analysis.Float(math.NaN())
			if n > 0 {
				ys[i] = analysis.Float(sum / float64(n))
			}
		}
		xs = ys
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		if x.Defined() {
			lo, hi = math.Min(lo, float64(x)), math.Max(hi, float64(x))
		}
	}
	r := []rune(blocks)
	var b strings.Builder
	for _, x := range xs {
		if !x.Defined() {
			b.WriteRune(' ')
			continue
		}
		i := 0
		if hi > lo {
			i = int((float64(x) - lo) / (hi - lo) * float64(len(r)-1))
		}
		b.WriteRune(r[i])
	}
	return fmt.Sprintf("%s  %.3f–%.3f", b.String(), lo, hi)
}
