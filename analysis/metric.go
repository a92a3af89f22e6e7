package analysis

import (
	"fmt"
	"math"
)

// hlParallelMin is the number of differences from which compareMetric
// computes the Hodges–Lehmann estimate in a goroutine of its own.
const hlParallelMin = 1 << 20

// compareMetric computes everything except the corrected p-value and, when
// the metric is comparable, the verdict: the arms and their summaries, the
// checks of their sizes and constancy, the estimates, the unpaired tests,
// the bootstrap interval, the trends, the paired analyses, and what the
// verdict will rest on.
func compareMetric(in MetricInput, opt Options) (m MetricResult) {
	c := newMetricComparison(in, opt)
	c.checkArms()
	c.relativeDifferences()
	if wait := c.hodgesLehmann(); wait != nil {
		defer func() { m.HodgesLehmann = wait() }()
	}
	c.unpairedTests()
	c.bootstrap()
	c.trends()
	c.pairedAnalyses()
	if c.decisionBasis() {
		c.floorOrVerdict()
	}
	c.m.Warnings = c.w.list
	return c.m
}

// metricComparison is one metric's comparison in progress: the stages of
// compareMetric fill m in order and share the sorted and scaled samples.
type metricComparison struct {
	in  MetricInput
	opt Options
	m   MetricResult
	w   warnings

	a, b           []float64   // A's and B's values as given
	sa, sb         []float64   // sorted once, for the summaries, the rank tests, the bootstrap and Hodges–Lehmann
	ranksA, ranksB []float64   // each value's rank within its arm, for the trends
	all            [][]float64 // the non-empty inputs, sorted, for the Kruskal–Wallis test of all of them
	scaleAB        float64     // the common scale of as and bs
	as, bs         []float64   // sa and sb scaled alike, for Hodges–Lehmann and the bootstrap

	enough                    bool // at least 2 values per arm
	constA, constB, sameConst bool // constant arms (and the same constant in both)
	skip                      bool // leave out the unpaired estimates no table shows (Options.SkipUnpairedEstimates)
}

// newMetricComparison takes the arms of in, the metric's direction (lower
// is better unless told otherwise; an unknown one is warned about), and
// summarizes each input from one sorted copy.
func newMetricComparison(in MetricInput, opt Options) *metricComparison {
	c := &metricComparison{in: in, opt: opt}
	if len(in.Samples) > 0 {
		c.a = in.Samples[0]
	}
	if len(in.Samples) > 1 {
		c.b = in.Samples[1]
	}
	better := in.Better
	if better == "" {
		better = BetterLower
	}
	if better != BetterLower && better != BetterHigher {
		c.w.add("", fmt.Sprintf("unknown direction %q: taking lower as better", in.Better))
		better = BetterLower
	}
	c.sa, c.ranksA = sortedWithRanks(c.a)
	c.sb, c.ranksB = sortedWithRanks(c.b)
	c.m = MetricResult{Name: in.Name, Unit: in.Unit, Better: better,
		A: summarizeSorted(c.sa), B: summarizeSorted(c.sb)}
	for _, s := range [][]float64{c.sa, c.sb} {
		if len(s) > 0 {
			c.all = append(c.all, s)
		}
	}
	for _, s := range in.Samples[min(2, len(in.Samples)):] {
		ss := sortedCopy(s)
		c.m.Others = append(c.m.Others, summarizeSorted(ss))
		if len(ss) > 0 {
			c.all = append(c.all, ss)
		}
	}
	c.skip = opt.SkipUnpairedEstimates && (len(in.Pairs) > 0 || in.DroppedRounds > 0)
	return c
}

// checkArms warns about arms too small to test, and about constant arms,
// which make several statistics undefined at once: said once here instead
// of once per statistic.
func (c *metricComparison) checkArms() {
	c.enough = true
	for _, arm := range []struct {
		name string
		xs   []float64
	}{{"A", c.a}, {"B", c.b}} {
		switch len(arm.xs) {
		case 0:
			c.w.add("", fmt.Sprintf("%s has no values", arm.name))
			c.enough = false
		case 1:
			c.w.add("", fmt.Sprintf("%s has only 1 value; at least 2 per arm are needed", arm.name))
			c.enough = false
		}
	}
	m := &c.m
	c.constA = len(c.a) >= 2 && m.A.SD == 0
	c.constB = len(c.b) >= 2 && m.B.SD == 0
	c.sameConst = c.constA && c.constB && m.A.Mean == m.B.Mean
	switch {
	case c.sameConst:
		c.w.add("", fmt.Sprintf("A and B are the same constant (%g): no difference observed, but no test is possible", float64(m.A.Mean)))
	case c.constA && c.constB:
		c.w.add("", fmt.Sprintf("A and B are constant (%g and %g)", float64(m.A.Mean), float64(m.B.Mean)))
	case c.constA:
		c.w.add("", fmt.Sprintf("A is constant (every value is %g)", float64(m.A.Mean)))
	case c.constB:
		c.w.add("", fmt.Sprintf("B is constant (every value is %g)", float64(m.B.Mean)))
	}
}

// quiet adds the warnings of a statistic unless the arms already explain
// them (too few values, the same constant).
func (c *metricComparison) quiet(msgs []string) {
	if c.enough && !c.sameConst {
		c.w.add("", msgs...)
	}
}

// bothArms reports whether A and B have a value each; twoEach, at least two.
func (c *metricComparison) bothArms() bool { return len(c.a) > 0 && len(c.b) > 0 }
func (c *metricComparison) twoEach() bool  { return len(c.a) >= 2 && len(c.b) >= 2 }

// relativeDifferences gives the differences of the means and the medians
// in % of A's.
func (c *metricComparison) relativeDifferences() {
	m := &c.m
	m.DeltaPctMean = relDiff(m.A.Mean, m.B.Mean)
	m.DeltaPctMedian = relDiff(m.A.Median, m.B.Median)
	if m.A.N > 0 && m.B.N > 0 && (m.A.Mean == 0 || m.A.Median == 0) {
		c.w.add("", "relative difference undefined where A's mean or median is 0")
	}
}

// hodgesLehmann scales both arms alike (for the bootstrap too) and
// computes the Hodges–Lehmann estimate. The costliest statistic runs
// alongside the others on large samples, so that metrics split evenly
// over the processors: it then returns the function that waits for it.
func (c *metricComparison) hodgesLehmann() (wait func() Float) {
	if !c.bothArms() {
		c.m.HodgesLehmann = undefined()
		return nil
	}
	c.scaleAB = scaleOf(c.sa, c.sb)
	c.as, c.bs = scaled(c.sa, c.scaleAB), scaled(c.sb, c.scaleAB)
	switch {
	case c.skip:
		c.m.HodgesLehmann = undefined()
	case len(c.as)*len(c.bs) >= hlParallelMin:
		hl := make(chan Float, 1)
		as, bs, scale := c.as, c.bs, c.scaleAB
		go func() { hl <- hodgesLehmannScaled(as, bs, scale) }()
		return func() Float { return <-hl }
	default:
		c.m.HodgesLehmann = hodgesLehmannScaled(c.as, c.bs, c.scaleAB)
	}
	return nil
}

// unpairedTests runs Welch's test (sharing its moments with the minimum
// detectable effect, which correctMDEs computes at the level of the family
// once the number of tested metrics is known), the rank tests on one
// ranking of A and B, and the Kruskal–Wallis test of all inputs when there
// are more than two.
func (c *metricComparison) unpairedTests() {
	m := &c.m
	var ws []string
	if c.twoEach() {
		moments := welchMoments(c.a, c.b)
		m.Welch, ws = welchFrom(moments, c.opt.Confidence)
		if !c.skip {
			m.moments = &moments
		}
	} else {
		m.Welch, ws = WelchTest(c.a, c.b, c.opt.Confidence)
	}
	m.MDEPct = undefined()
	c.quiet(ws)
	if c.bothArms() {
		r := rankGroups(c.sa, c.sb)
		m.MannWhitney, ws = mannWhitneyRanks(len(c.a), len(c.b), r)
		c.quiet(ws)
		m.KruskalWallis, ws = kruskalWallisRanks([]int{len(c.a), len(c.b)}, r)
		c.quiet(ws)
	} else {
		m.MannWhitney, ws = MannWhitneyU(c.a, c.b)
		c.quiet(ws)
		m.KruskalWallis, ws = kruskalWallisSorted(nil)
		c.quiet(ws)
	}
	if len(c.in.Samples) > 2 {
		var kw KruskalWallis
		kw, ws = kruskalWallisSorted(c.all)
		c.quiet(ws)
		m.KruskalWallisAll = &kw
	}
}

// bootstrap gives the bootstrap interval of the median difference, or
// only its warnings when the unpaired estimates are skipped.
func (c *metricComparison) bootstrap() {
	m, opt := &c.m, c.opt
	seed := metricSeed(opt.Seed, c.in.Name, c.in.Unit)
	var ws []string
	switch {
	case c.skip && c.twoEach() && opt.Resamples >= 2:
		m.Bootstrap = Bootstrap{Point: undefined(), Low: undefined(), High: undefined(), SE: undefined(),
			PctLow: undefined(), PctHigh: undefined()}
		ws = bootstrapScaledWarnings(c.as, c.bs, opt.Resamples, seed)
	case c.twoEach() && opt.Resamples >= 2:
		m.Bootstrap, ws = bootstrapScaled(c.as, c.bs, c.scaleAB, opt.Confidence, opt.Resamples, seed, orderStatMedian)
	default:
		m.Bootstrap, ws = BootstrapMedianDiff(c.a, c.b, opt.Confidence, opt.Resamples, seed)
	}
	c.quiet(ws)
}

// trends gives each arm's Spearman correlation with the order of its
// values. Drift warnings are given in Compare, corrected across metrics
// and arms.
func (c *metricComparison) trends() {
	var ws []string
	c.m.Trend.A, ws = spearmanRanks(c.ranksA)
	if len(c.a) >= 3 && !c.constA {
		c.w.add("A: ", ws...)
	}
	c.m.Trend.B, ws = spearmanRanks(c.ranksB)
	if len(c.b) >= 3 && !c.constB {
		c.w.add("B: ", ws...)
	}
}

// pairedAnalyses explains a disagreement of the unpaired tests when there
// are no pairs; with pairs, it analyses them, per device when the rounds
// come from a pool, and sequentially when asked.
func (c *metricComparison) pairedAnalyses() {
	in, opt, m := c.in, c.opt, &c.m
	if len(in.Pairs) == 0 && in.DroppedRounds == 0 {
		if msg := testDisagreement(m.Welch.P, m.MannWhitney.P, opt.Alpha); msg != "" {
			m.TestDisagreement = msg
			c.w.add("", msg)
		}
		return
	}
	seed := metricSeed(opt.Seed, in.Name, in.Unit)
	pr, ws := AnalyzePaired(in.Pairs, in.DroppedRounds, opt.Alpha, opt.Confidence, opt.Resamples, seed^0x70616972)
	c.w.add("", ws...)
	m.Paired = &pr
	if len(in.Strata) > 0 {
		// The disagreement warning is given in Compare, Holm-adjusted
		// across the pooled metrics (warnPoolDisagreement).
		if pa, ok := AnalyzePool(in.Pairs, in.Strata, in.PairStrata, opt.Alpha, opt.Confidence, opt.Resamples,
			seed^0x706f6f6c); ok {
			m.Pool = &pa
		}
	}
	if opt.Sequential || opt.AnytimeValid {
		if d, ok := LogRatios(in.Pairs); ok && len(d) > 0 {
			so := SequentialOptions{Alpha: opt.Alpha, ThresholdPct: opt.ThresholdPct, Better: m.Better,
				MaxRounds: opt.SequentialMaxRounds, Trim: opt.SequentialTrim}
			seq := sequentialPairedOn(d, so, opt.Designs.design(so))
			m.Sequential = &seq
			m.logRatios, m.seqOpt = d, so
		}
	}
}

// decisionBasis marks a metric that cannot be tested and picks the
// analysis its verdict rests on. It reports false for the sequential
// analysis, whose verdict Compare decides from the anytime-valid analysis
// alone.
func (c *metricComparison) decisionBasis() bool {
	m := &c.m
	if c.sameConst {
		m.untested = "the same constant in both arms"
	} else if pr := m.Paired; pr != nil && pr.N > 0 && pr.Zeros == pr.N {
		m.untested = "every pair has B = A"
	}
	m.Decision = decisionBasis(*m, c.opt)
	return m.Decision.Method != MethodSequential
}

// floorOrVerdict makes the metric inconclusive when its primary p-value is
// undefined or the arms are too small, and otherwise records the smallest
// p-value its test can reach (guardFloors judges it across the family).
func (c *metricComparison) floorOrVerdict() {
	m, opt := &c.m, c.opt
	switch {
	case m.Paired != nil:
		pr := m.Paired
		nz := pr.N - pr.Zeros
		switch {
		case !pr.P.Defined():
			m.Verdict = VerdictInconclusive
		case pr.Exact:
			m.floor = pFloor{p: signedRankMinP(nz), what: fmt.Sprintf("with %d pairs the smallest possible signed-rank p is %.3g", nz, signedRankMinP(nz)),
				more: "rounds"}
		}
	case !c.enough:
		m.Verdict = VerdictInconclusive
	case !primaryP(*m, opt.Test).Defined():
		m.Verdict = VerdictInconclusive
		if !c.sameConst {
			c.w.add("", fmt.Sprintf("the %s p-value is undefined", opt.Test))
		}
	case opt.Test == TestMannWhitney:
		minP := mwuMinPFor(len(c.a), len(c.b), m.MannWhitney.Exact)
		m.floor = pFloor{p: minP, what: fmt.Sprintf("with %d and %d values the smallest possible Mann–Whitney p is %.3g", len(c.a), len(c.b), minP),
			more: "samples"}
	}
}

// testDisagreement explains, when Welch's t-test and the Mann–Whitney test
// fall on different sides of alpha (raw p-values), what the data show: the
// means compare the whole distributions, tails included, the ranks compare
// where most values lie. Means apart with ranks alike is a change in the
// tail (a few outliers, a longer tail), not in the middle; ranks apart
// with means alike is a shift of the middle that the tail's variance hides
// from the means. Empty when they agree or either is undefined.
func testDisagreement(welchP, mwuP Float, alpha float64) string {
	if !welchP.Defined() || !mwuP.Defined() {
		return ""
	}
	wsig, msig := float64(welchP) < alpha, float64(mwuP) < alpha
	ps := fmt.Sprintf("Welch p=%s, Mann–Whitney p=%s at alpha %g", FormatP(float64(welchP), alpha, 3),
		FormatP(float64(mwuP), alpha, 3), alpha)
	switch {
	case wsig && !msig:
		return "the tests disagree (" + ps + "): the means differ but the ranks do not, so the change is in the tail (a few outliers or a longer tail), not in the middle of the distribution; look at the values before acting on either"
	case msig && !wsig:
		return "the tests disagree (" + ps + "): the ranks differ but the means do not, so the middle of the distribution moved while the spread of the tail hides it from the means"
	}
	return ""
}

// mwuMinPFor is the smallest two-sided Mann–Whitney p-value attainable with
// samples of sizes m and n (complete separation, no ties).
func mwuMinPFor(m, n int, exact bool) float64 {
	if exact {
		return mwuMinP(m, n)
	}
	fm, fn := float64(m), float64(n)
	z := (fm*fn/2 - 0.5) / math.Sqrt(fm*fn*(fm+fn+1)/12)
	return math.Min(1, 2*normalSF(z))
}

// relDiff returns (b − a)/|a|·100, undefined when a is 0 or either is undefined.
func relDiff(a, b Float) Float {
	if !a.Defined() || !b.Defined() || a == 0 {
		return undefined()
	}
	fa, fb := float64(a), float64(b)
	// Divide before subtracting so huge magnitudes cannot overflow.
	return defined((fb/math.Abs(fa) - fa/math.Abs(fa)) * 100)
}
