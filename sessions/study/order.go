package study

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/lab"
)

// OrderConfig configures an order-dependence study (OrderSage's
// Algorithm 1).
type OrderConfig struct {
	Experiment *lab.Experiment
	Devices    Devices
	// Runs is N, the repetitions of a fixed-order and a random-order run.
	Runs int
	// Alpha is the family-wise error rate (default: the experiment's alpha).
	Alpha float64
	// Test is the primary test of the A-versus-B conclusions (default
	// mann-whitney).
	Test string
}

// Order is the result of an order-dependence study.
type Order struct {
	Device          string  `json:"device"`
	Runs            int     `json:"runs"` // repetitions that completed both runs
	TrialsPerArm    int     `json:"trials_per_arm"`
	OrderMatters    bool    `json:"order_matters"`
	Alpha           float64 `json:"alpha"`
	AlphaBonferroni float64 `json:"alpha_bonferroni"`
	// Tests holds one entry per build and metric ("control/startup_ms").
	Tests []OrderTest `json:"tests"`
	// Conclusions compares the A-versus-B verdict each order leads to.
	Conclusions []OrderConclusion `json:"conclusions"`
	Failed      int               `json:"failed"` // runs that did not complete
	Warnings    []string          `json:"warnings"`
	Partial     bool              `json:"partial,omitempty"` // cancelled: covers the repetitions that finished
	// Underpowered is set when Runs is too small for any test to reach
	// α/tests, so "order does not matter" would mean nothing.
	Underpowered bool `json:"underpowered,omitempty"`
}

// AlphaConclusions is the level each OrderConclusion's P is tested at for a
// red flag: Alpha over the metrics (Bonferroni), 0 without conclusions.
func (o *Order) AlphaConclusions() float64 {
	if len(o.Conclusions) == 0 {
		return 0
	}
	return o.Alpha / float64(len(o.Conclusions))
}

// OrderTest compares one build's metric between fixed-order and
// random-order runs. Each run contributes its mean, since trials within a
// run share that run's state.
type OrderTest struct {
	Name        string            `json:"name"`
	Arm         string            `json:"arm"`
	Metric      string            `json:"metric"`
	H           analysis.Float    `json:"h"`
	P           analysis.Float    `json:"p"`         // Kruskal–Wallis, fixed against random
	DeltaPct    analysis.Float    `json:"delta_pct"` // (mean fixed − mean random)/mean fixed·100
	Significant bool              `json:"significant"`
	RedFlag     bool              `json:"red_flag"`
	Fixed       analysis.Interval `json:"fixed"`  // median of run means and its CI
	Random      analysis.Interval `json:"random"` //
	Reasons     []string          `json:"reasons,omitempty"`
}

// OrderConclusion is the verdict on a metric under each order, with the
// run as the unit: from the per-run means of all runs of that order,
// paired by run (concludeRuns).
type OrderConclusion struct {
	Metric         string         `json:"metric"`
	Fixed          string         `json:"fixed"`
	Random         string         `json:"random"`
	DeltaPctFixed  analysis.Float `json:"delta_pct_fixed"`  // the paired analysis's estimate, in %
	DeltaPctRandom analysis.Float `json:"delta_pct_random"` //
	// P is Mann–Whitney's test of the per-run log ratios B/A in fixed
	// order against those in random order: whether the order changes the
	// A/B difference itself.
	P analysis.Float `json:"p"`
	// RedFlag: the conclusions differ and P is below α/metrics. Differing
	// conclusions alone are a warning: two tests at level α each disagree
	// about 2α of the time by chance.
	RedFlag bool `json:"red_flag"`
}

// DefaultOrderRuns is N when none is given.
const DefaultOrderRuns = 10

// OrderStudy runs N repetitions of a fixed-order run and a random-order
// run (the runner's Setup, or a fresh device, being the reset procedure
// between them), then compares each build's metric between the two orders
// with Kruskal–Wallis and Bonferroni's correction. progress, if not nil,
// is called after every run. When ctx is cancelled it returns the result of
// the repetitions that finished (marked Partial) together with ctx's error.
func OrderStudy(ctx context.Context, cfg OrderConfig, progress func(Progress)) (*Order, error) {
	exp := cfg.Experiment
	if exp == nil || cfg.Devices.Open == nil {
		return nil, errors.New("order: experiment and device opener are required")
	}
	if cfg.Runs == 0 {
		cfg.Runs = DefaultOrderRuns
	}
	if cfg.Runs < 2 {
		return nil, fmt.Errorf("order: %d runs: want at least 2 repetitions", cfg.Runs)
	}
	alpha := cfg.Alpha
	if alpha == 0 {
		alpha = exp.Alpha
	}
	if alpha == 0 {
		alpha = lab.DefaultAlpha
	}
	if !(alpha > 0 && alpha < 1) {
		return nil, fmt.Errorf("order: alpha %v: want a number between 0 and 1", alpha)
	}
	var specs []runSpec
	for n := 0; n < cfg.Runs; n++ {
		for _, mode := range []string{lab.OrderFixed, lab.OrderRandom} {
			e := clone(exp)
			e.Order = mode
			e.Seed = seedFor(exp.Seed, mode, n)
			specs = append(specs, runSpec{phase: mode, index: n, seed: e.Seed, exp: e})
		}
	}
	opt := analysisOptions(exp, cfg.Test)
	opt.Correction = analysis.CorrectionHolm // conclusions as `perflab run` would draw them
	data, err := collect(ctx, "order", cfg.Devices, specs, exp, "", opt, progress)
	if err != nil {
		if done := finishedRuns(data); done > 0 && ctx.Err() != nil {
			o, serr := summarizeOrder(cfg, alpha, opt, specs, data)
			if serr == nil {
				o.Partial = true
				o.Warnings = append(o.Warnings, fmt.Sprintf("cancelled: the result covers the %d of %d repetitions that finished", o.Runs, cfg.Runs))
				return o, err
			}
		}
		return nil, err
	}
	return summarizeOrder(cfg, alpha, opt, specs, data)
}

// OrderStream runs OrderStudy in the background; see ValidateStream.
func OrderStream(ctx context.Context, cfg OrderConfig) <-chan Update {
	return stream(ctx, func(progress func(Progress)) Update {
		o, err := OrderStudy(ctx, cfg, progress)
		return Update{Order: o, Err: err}
	})
}

// summarizeOrder judges an order study: the repetitions whose fixed- and
// random-order runs both completed, the metrics, each arm's test of fixed
// against random order, the conclusion each order leads to, and the flags
// on each test.
func summarizeOrder(cfg OrderConfig, alpha float64, opt analysis.Options, specs []runSpec, data []*runData) (*Order, error) {
	exp := cfg.Experiment
	o := &Order{Device: strings.Join(exp.DeviceList(), ","), TrialsPerArm: exp.Trials, Alpha: alpha, Tests: []OrderTest{},
		Conclusions: []OrderConclusion{}, Warnings: []string{}}
	byMode, infos, seen, firstErr := o.repetitions(specs, data)
	if o.Runs < 2 {
		return nil, fmt.Errorf("order: only %d repetitions completed both runs, need 2; first error: %v", o.Runs, firstErr)
	}
	if o.Failed > 0 {
		o.Warnings = append(o.Warnings, fmt.Sprintf("%d runs did not complete; their repetitions are left out (first error: %v)", o.Failed, firstErr))
	}
	names := seen
	if len(exp.Metrics) > 0 {
		names = nil
		for _, m := range exp.Metrics {
			if _, ok := infos[m]; ok {
				names = append(names, m)
			}
		}
	}
	if len(names) == 0 {
		return nil, errors.New("order: no trial reported any metric")
	}
	o.testOrders(byMode, names, alpha, opt)
	differs := o.concludeOrders(byMode, names, infos, alpha, opt)
	o.flagTests(differs)
	return o, nil
}

// repetitions groups the runs by order mode, keeping a repetition only when
// both its runs (fixed, then random) completed, and gathers their metrics
// and the first error.
func (o *Order) repetitions(specs []runSpec, data []*runData) (byMode map[string][]*runData, infos map[string]metricInfo, seen []string, firstErr error) {
	byMode, infos = map[string][]*runData{}, map[string]metricInfo{}
	for i := 0; i+1 < len(specs); i += 2 {
		f, r := data[i], data[i+1]
		if !finished(f) || !finished(r) {
			continue // cancelled before the repetition finished
		}
		for _, d := range []*runData{f, r} {
			if d.err != nil {
				o.Failed++
				if firstErr == nil {
					firstErr = d.err
				}
			}
		}
		if f.err != nil || r.err != nil {
			continue // a repetition counts only with both its runs
		}
		o.Runs++
		byMode[lab.OrderFixed] = append(byMode[lab.OrderFixed], f)
		byMode[lab.OrderRandom] = append(byMode[lab.OrderRandom], r)
		f.metrics(infos, &seen)
		r.metrics(infos, &seen)
	}
	return byMode, infos, seen, firstErr
}

// testOrders tests, for each metric and arm, whether the run means differ
// between fixed and random order (Kruskal–Wallis, Bonferroni across the
// defined tests), with the median intervals, and warns when there are too
// few repetitions to find anything.
func (o *Order) testOrders(byMode map[string][]*runData, names []string, alpha float64, opt analysis.Options) {
	ntests := 0
	for _, m := range names {
		for _, arm := range []string{lab.ArmControl, lab.ArmTreatment} {
			t := orderTest(byMode, arm, m, opt.Confidence)
			if t.P.Defined() {
				ntests++
			}
			o.Tests = append(o.Tests, t)
		}
	}
	if ntests == 0 {
		ntests = 1
		o.Warnings = append(o.Warnings, "no test has a defined p-value (constant metrics?)")
	}
	o.AlphaBonferroni = alpha / float64(ntests)
	if p := separatedP(o.Runs); p >= o.AlphaBonferroni {
		ps, as := analysis.FormatPAlpha(p, o.AlphaBonferroni, 3, 2)
		o.Underpowered = true
		n := o.Runs
		for n < 1000 && separatedP(n) >= o.AlphaBonferroni {
			n++
		}
		o.Warnings = append(o.Warnings, fmt.Sprintf(
			"%d repetitions are too few to find anything: even completely separated orders give p = %s ≥ α/tests = %s; use --runs %d or more",
			o.Runs, ps, as, n))
	}
	if o.Runs < 6 {
		o.Warnings = append(o.Warnings, fmt.Sprintf("median intervals need at least 6 repetitions at %.0f%% (have %d)", 100*opt.Confidence, o.Runs))
	}
}

// orderTest compares arm's run means of metric m between fixed and random
// order.
func orderTest(byMode map[string][]*runData, arm, m string, confidence float64) OrderTest {
	t := OrderTest{Name: arm + "/" + m, Arm: arm, Metric: m}
	fixedMeans, fixedAll := runMeans(byMode[lab.OrderFixed], arm, m)
	randMeans, randAll := runMeans(byMode[lab.OrderRandom], arm, m)
	kw, _ := analysis.KruskalWallisH(fixedMeans, randMeans)
	t.H, t.P = kw.H, kw.P
	mf, mr := mean(fixedAll), mean(randAll)
	t.DeltaPct = analysis.Float(math.NaN())
	if mf != 0 && !math.IsNaN(mf) && !math.IsNaN(mr) {
		t.DeltaPct = analysis.Float((mf - mr) / mf * 100)
	}
	t.Fixed, _ = analysis.MedianCI(fixedMeans, confidence)
	t.Random, _ = analysis.MedianCI(randMeans, confidence)
	return t
}

// concludeOrders gives the conclusion each order leads to, the run being
// the unit, and whether the per-run differences differ between the
// orders. It returns, by metric, why a differing conclusion is a red flag;
// a differing conclusion that chance explains as well is a warning.
func (o *Order) concludeOrders(byMode map[string][]*runData, names []string, infos map[string]metricInfo, alpha float64, opt analysis.Options) map[string]string {
	rf := concludeRuns(byMode[lab.OrderFixed], names, infos, opt)
	rr := concludeRuns(byMode[lab.OrderRandom], names, infos, opt)
	alphaDelta := alpha / float64(len(names))
	differs := map[string]string{}
	for i, m := range names {
		c := OrderConclusion{Metric: m, Fixed: rf.Metrics[i].Verdict, Random: rr.Metrics[i].Verdict,
			DeltaPctFixed: rf.Metrics[i].Decision.DeltaPct, DeltaPctRandom: rr.Metrics[i].Decision.DeltaPct,
			P: analysis.Float(math.NaN())}
		df, okf := runLogRatios(byMode[lab.OrderFixed], m)
		dr, okr := runLogRatios(byMode[lab.OrderRandom], m)
		if okf && okr {
			mw, _ := analysis.MannWhitneyU(df, dr)
			c.P = mw.P
		}
		if c.Fixed != c.Random {
			ps, as := analysis.FormatPAlpha(float64(c.P), alphaDelta, 3, 2)
			if !c.P.Defined() {
				ps = format.Undefined
			}
			switch {
			case c.P.Defined() && float64(c.P) < alphaDelta:
				c.RedFlag = true
				differs[m] = fmt.Sprintf("the A/B conclusion is %q in fixed order but %q in random order, and the per-run differences differ between the orders (Mann–Whitney p = %s < %s)",
					c.Fixed, c.Random, ps, as)
			default:
				o.Warnings = append(o.Warnings, fmt.Sprintf(
					"%s: the A/B conclusion is %q in fixed order but %q in random order, but the per-run differences do not differ between the orders (Mann–Whitney p = %s ≥ %s): a weaker signal than a red flag, as likely chance as order",
					m, c.Fixed, c.Random, ps, as))
			}
		}
		o.Conclusions = append(o.Conclusions, c)
	}
	return differs
}

// flagTests marks each test significant after Bonferroni, and red-flags
// it, with the reasons, when the median intervals do not overlap or its
// metric's conclusion differs between the orders (differs).
func (o *Order) flagTests(differs map[string]string) {
	for i := range o.Tests {
		t := &o.Tests[i]
		t.Significant = t.P.Defined() && float64(t.P) < o.AlphaBonferroni
		if t.Significant {
			o.OrderMatters = true
			ps, as := analysis.FormatPAlpha(float64(t.P), o.AlphaBonferroni, 3, 3)
			t.Reasons = append(t.Reasons, fmt.Sprintf("fixed and random orders differ (Kruskal–Wallis p = %s < %s)", ps, as))
		}
		if disjoint(t.Fixed, t.Random) {
			t.RedFlag = true
			t.Reasons = append(t.Reasons, "the median intervals of fixed and random runs do not overlap")
		}
		if why, ok := differs[t.Metric]; ok {
			t.RedFlag = true
			t.Reasons = append(t.Reasons, why)
		}
	}
}

// concludeRuns draws the A/B conclusion of one order from its runs with
// the run as the unit (trials within a run share that run's state, so
// pooling them as independent overstates the evidence): each run
// contributes one pair, its control and treatment means, and the verdict
// is Compare's paired analysis of them (Wilcoxon's signed-rank test of the
// per-run log ratios), with opt's correction across metrics as in run.
func concludeRuns(runs []*runData, names []string, infos map[string]metricInfo, opt analysis.Options) analysis.Report {
	var in []analysis.MetricInput
	for _, m := range names {
		var a, b []float64
		var pairs []analysis.Pair
		for _, d := range runs {
			ma, mb := mean(d.values(lab.ArmControl, m)), mean(d.values(lab.ArmTreatment, m))
			if math.IsNaN(ma) || math.IsNaN(mb) {
				continue
			}
			a, b = append(a, ma), append(b, mb)
			pairs = append(pairs, analysis.Pair{A: ma, B: mb})
		}
		in = append(in, analysis.MetricInput{Name: m, Unit: infos[m].unit, Better: infos[m].better,
			Samples: [][]float64{a, b}, Pairs: pairs})
	}
	return analysis.Compare(in, opt)
}

// runLogRatios returns each run's log(mean treatment / mean control) of
// the metric; ok is false when fewer than 2 runs have one.
func runLogRatios(runs []*runData, metric string) ([]float64, bool) {
	var out []float64
	for _, d := range runs {
		ma, mb := mean(d.values(lab.ArmControl, metric)), mean(d.values(lab.ArmTreatment, metric))
		if ma > 0 && mb > 0 && !math.IsInf(ma, 0) && !math.IsInf(mb, 0) {
			out = append(out, math.Log(mb/ma))
		}
	}
	return out, len(out) >= 2
}

// runMeans returns each run's mean of the metric for arm, and every value.
func runMeans(runs []*runData, arm, metric string) (means, all []float64) {
	for _, d := range runs {
		xs := d.values(arm, metric)
		if len(xs) == 0 {
			continue
		}
		means = append(means, mean(xs))
		all = append(all, xs...)
	}
	return means, all
}

// disjoint reports whether two defined intervals do not overlap.
func disjoint(a, b analysis.Interval) bool {
	if !a.Low.Defined() || !a.High.Defined() || !b.Low.Defined() || !b.High.Defined() {
		return false
	}
	return a.High < b.Low || b.High < a.Low
}

// separatedP is the smallest Kruskal–Wallis p-value n repetitions per order
// can give: every fixed-order value below every random-order one.
func separatedP(n int) float64 {
	a, b := make([]float64, n), make([]float64, n)
	for i := range a {
		a[i], b[i] = float64(i), float64(n+i)
	}
	kw, _ := analysis.KruskalWallisH(a, b)
	return float64(kw.P)
}
