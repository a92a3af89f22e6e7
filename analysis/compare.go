// Package analysis holds perflab's statistics: summaries, two-sample tests,
// bootstrap intervals, multiple-comparison corrections and the verdict per
// metric. It is pure computation over []float64: no I/O, no global state.
// Statistics that are undefined for the data at hand are reported as
// undefined (Float, JSON null) with a warning, never as NaN or a made-up
// number.
package analysis

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"runtime"
	"sync"
)

// MaxResamples bounds Options.Resamples: each resample keeps two float64s
// per metric in memory.
const MaxResamples = 10_000_000

// Primary tests that decide the verdict.
const (
	TestMannWhitney = "mann-whitney"
	TestWelch       = "welch"
)

// Verdicts of a metric: one vocabulary for compare, run, report, replay,
// the workbench and validate.
const (
	// VerdictRegression: B is significantly worse than A (test and
	// interval agree) by at least the practical threshold.
	VerdictRegression = "regression"
	// VerdictImprovement: B is significantly better than A by at least the
	// threshold.
	VerdictImprovement = "improvement"
	// VerdictNoChange: the whole interval lies within ±threshold, an
	// equivalence result; never reached with threshold 0.
	VerdictNoChange = "no change"
	// VerdictInconclusive: anything else, including too few samples and
	// undefined statistics; Decision tells the estimate, its interval, the
	// MDE and about how many more trials would decide.
	VerdictInconclusive = "inconclusive"
)

// Directions of a metric.
const (
	BetterLower  = "lower"
	BetterHigher = "higher"
)

// Options control a comparison. Zero fields take the defaults of
// DefaultOptions, except Seed, where 0 is a seed like any other.
type Options struct {
	Alpha      float64 // significance level of the primary test, after correction
	Confidence float64 // level of confidence intervals
	Correction string  // holm, bonferroni or none, across metrics
	Test       string  // primary test: mann-whitney or welch
	Resamples  int     // bootstrap resamples
	Seed       uint64  // bootstrap seed
	// ThresholdPct is the practical threshold in % (≥ 0): a significant
	// change smaller than it is not a regression or an improvement, and an
	// interval within ±ThresholdPct is "no change". 0: any significant
	// change counts.
	ThresholdPct float64
	// Sequential makes the anytime-valid paired analysis (Sequential) the
	// primary one for paired inputs: for runs that stop automatically,
	// where fixed-n p-values are not valid.
	Sequential bool
	// AnytimeValid adds the anytime-valid analysis (MetricResult.Sequential)
	// to paired inputs, for views looked at after every round; implied by
	// Sequential. It costs O(n) per metric.
	AnytimeValid bool
	// SequentialMaxRounds is stop auto's max_trials: with 2 …
	// MaxCalibratedRounds the sequential analysis is the group-sequential
	// design that spends alpha over that many looks (valid for runs
	// stopped by the rule at or before the cap); 0 keeps the uncapped
	// t-mixture, valid at any stopping time.
	SequentialMaxRounds int
	// SequentialTrim is the group-sequential analysis' trimming
	// (SequentialOptions.Trim): 0 looks at the mean log ratio.
	SequentialTrim float64
	// Designs, when not nil, keeps the group-sequential designs of
	// SequentialMaxRounds across calls (see SequentialDesigns): a caller
	// that compares after every trial sets one and reuses the Options.
	// Results do not depend on it.
	Designs *SequentialDesigns
	// Primary names the primary metric: tested at the full Alpha, the
	// others corrected among themselves (family.go). A session's views set
	// it (engine.Options: the plan's "primary" or first metric, the metric
	// the stop rule watches); "" corrects every tested metric together.
	Primary string
	// FirstIsPrimary makes the first metric compared the primary when
	// Primary is "" (a session that lists no metrics: the stop rule
	// watches the first metric its trials report, the first input).
	FirstIsPrimary bool
	// Labels name the inputs (A, B, ...) in the report; optional.
	Labels []string
	// SkipUnpairedEstimates, for a caller that shows only Table (or
	// VersusTable), leaves out the unpaired estimates that no table shows
	// for a metric whose verdict rests on its pairs (MetricResult.Paired
	// set): the bootstrap interval of the median difference (Bootstrap
	// stays undefined, with Resamples 0; its warnings are still given,
	// exactly as the full bootstrap would give them), the Hodges–Lehmann
	// shift and the unpaired minimum detectable effect (MDEPct; the
	// paired one, which the table shows, stays). Everything else, and
	// every unpaired metric, is as without it. The zero value computes
	// everything: JSON, exports and other views need it.
	SkipUnpairedEstimates bool
}

// DefaultOptions returns alpha 0.05, confidence 0.95, Holm's correction,
// the Mann–Whitney test, 10,000 resamples and seed 1.
func DefaultOptions() Options {
	return Options{Alpha: 0.05, Confidence: 0.95, Correction: CorrectionHolm,
		Test: TestMannWhitney, Resamples: DefaultResamples, Seed: 1}
}

// withDefaults fills zero fields from DefaultOptions.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Alpha == 0 {
		o.Alpha = d.Alpha
	}
	if o.Confidence == 0 {
		o.Confidence = d.Confidence
	}
	if o.Correction == "" {
		o.Correction = d.Correction
	}
	if o.Test == "" {
		o.Test = d.Test
	}
	if o.Resamples == 0 {
		o.Resamples = d.Resamples
	}
	return o
}

// Validate reports the first invalid option, naming it as the command-line
// flag does.
func (o Options) Validate() error {
	o = o.withDefaults()
	var errs []error
	if !(o.Alpha > 0 && o.Alpha < 1) {
		errs = append(errs, fmt.Errorf("--alpha must be between 0 and 1 (exclusive), got %v", o.Alpha))
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		errs = append(errs, fmt.Errorf("--confidence must be between 0 and 1 (exclusive), got %v", o.Confidence))
	}
	switch o.Correction {
	case CorrectionHolm, CorrectionBonferroni, CorrectionBH, CorrectionWeightedBH, CorrectionNone:
	default:
		errs = append(errs, fmt.Errorf("--correction must be holm, bonferroni, bh, weighted-bh or none, got %q", o.Correction))
	}
	switch o.Test {
	case TestMannWhitney, TestWelch:
	default:
		errs = append(errs, fmt.Errorf("--test must be mann-whitney or welch, got %q", o.Test))
	}
	if !(o.ThresholdPct >= 0 && o.ThresholdPct < 1e6) {
		errs = append(errs, fmt.Errorf("--threshold must be a percentage of at least 0, got %v", o.ThresholdPct))
	}
	if o.Resamples < 2 || o.Resamples > MaxResamples {
		errs = append(errs, fmt.Errorf("--resamples must be between 2 and %d, got %d", MaxResamples, o.Resamples))
	}
	return errors.Join(errs...)
}

// MetricInput is one metric's samples: Samples[0] is A (control),
// Samples[1] is B (treatment); further samples take part in the
// Kruskal–Wallis test of all inputs. A missing or empty sample makes the
// metric inconclusive, with a warning.
//
// Pairs, when given (rounds of alternate or random order, or `compare
// --paired`), make the paired analysis primary: the verdict rests on the
// per-pair log ratio (Paired) instead of the unpaired test. Samples still
// hold each arm's values for the summaries. DroppedRounds counts rounds
// left out of Pairs because a failed trial broke them (see PairRounds).
type MetricInput struct {
	Name          string
	Unit          string
	Better        string // "lower" (default) or "higher"
	Samples       [][]float64
	Pairs         []Pair
	DroppedRounds int
	// Strata name the devices of a session over a pool and PairStrata
	// gives, for each pair, the index of its device in Strata: the
	// analysis then blocks on device (see PoolAnalysis). Both are nil for
	// one device.
	Strata     []string
	PairStrata []int
	// MorePairs and MoreDropped are Pairs and DroppedRounds of the inputs
	// after B (C, D, ...) with A, for CompareVersus; Compare ignores them.
	MorePairs   [][]Pair
	MoreDropped []int
	// Weight is the metric's weight under CorrectionWeightedBH (≥ 0; the
	// weights of a family's members are rescaled to average 1); the
	// other corrections ignore it. It must not depend on the outcome of
	// the metric's test (a profile's share of time, from both arms
	// pooled, does not: see profdiff).
	Weight float64
}

// Trend holds the Spearman correlation of each arm's values with their
// position, a check that trials were independent of order and time.
type Trend struct {
	A Correlation `json:"a"`
	B Correlation `json:"b"`
}

// MetricResult is the comparison of one metric between A and B.
type MetricResult struct {
	Name           string        `json:"name"`
	Unit           string        `json:"unit"`
	Better         string        `json:"better"`
	A              Summary       `json:"a"`
	B              Summary       `json:"b"`
	DeltaPctMean   Float         `json:"delta_pct_mean"`   // (mean B − mean A)/|mean A|·100
	DeltaPctMedian Float         `json:"delta_pct_median"` // (median B − median A)/|median A|·100
	HodgesLehmann  Float         `json:"hodges_lehmann"`   // median of all b − a
	Welch          Welch         `json:"welch"`
	MannWhitney    MannWhitney   `json:"mann_whitney"`
	KruskalWallis  KruskalWallis `json:"kruskal_wallis"` // A against B
	Bootstrap      Bootstrap     `json:"bootstrap"`
	Trend          Trend         `json:"trend"`
	MDEPct         Float         `json:"mde_pct"`    // minimum detectable effect, % of mean A
	PAdjusted      Float         `json:"p_adjusted"` // primary test's p after correction
	// Paired is the paired analysis, present when the input had pairs; it
	// is then primary.
	Paired *Paired `json:"paired,omitempty"`
	// Sequential is the anytime-valid analysis of the pairs, valid at any
	// look (present with Paired); primary with Options.Sequential.
	Sequential *Sequential `json:"sequential,omitempty"`
	// Pool is the analysis blocked on device, for a session over a pool
	// of devices (present with Paired when the pairs came from at least
	// two devices).
	Pool *PoolAnalysis `json:"pool,omitempty"`
	// TestDisagreement, when not empty, says that Welch's test and the
	// Mann–Whitney test disagree at alpha on unpaired data, and what that
	// means (also among the warnings).
	TestDisagreement string   `json:"test_disagreement,omitempty"`
	Decision         Decision `json:"decision"` // what the verdict rests on
	Verdict          string   `json:"verdict"`
	Warnings         []string `json:"warnings"`
	// Others summarises inputs after the second (C, D, ...), when given.
	Others []Summary `json:"others,omitempty"`
	// KruskalWallisAll tests all inputs of this metric together; present
	// only with three or more inputs (with two, KruskalWallis is that test).
	KruskalWallisAll *KruskalWallis `json:"kruskal_wallis_all,omitempty"`

	floor pFloor // the primary test's smallest attainable p, for the guard
	// untested says why the metric cannot be tested although its test
	// may give a p-value (the same constant in both arms, every pair
	// B = A): it is then no member of the family (family.go).
	untested string
	weight   float64     // MetricInput.Weight
	moments  *welchParts // for the MDE at the corrected level
	// The sequential analysis' inputs, and its decision at the family's
	// level (familyLevels), for a secondary metric.
	logRatios []float64
	seqOpt    SequentialOptions
	familySeq *Sequential
	atFamily  *familySeqKept // a Comparer's, else nil
}

// Report is the comparison of all metrics. Its JSON form is the contract
// of `perflab compare --json` and of session reports.
type Report struct {
	Alpha        float64  `json:"alpha"`
	Confidence   float64  `json:"confidence"`
	Correction   string   `json:"correction"`
	PrimaryTest  string   `json:"primary_test"`
	Seed         uint64   `json:"seed"` // bootstrap seed, to reproduce the intervals
	ThresholdPct float64  `json:"threshold_pct"`
	Inputs       []string `json:"inputs,omitempty"`
	// Primary is the primary metric, tested at the full alpha (family.go),
	// when Options.Primary named a tested metric.
	Primary string         `json:"primary,omitempty"`
	Metrics []MetricResult `json:"metrics"`
	// KruskalWallisAll tests all inputs together, present only with three
	// or more inputs and a single metric (with several metrics it is given
	// per metric instead).
	KruskalWallisAll *KruskalWallis `json:"kruskal_wallis_all,omitempty"`
	// Geomeans are benchstat's geomean rows: one per unit shared by two
	// or more metrics (Compare's; Versus has its own).
	Geomeans []Geomean `json:"geomeans,omitempty"`
	Warnings []string  `json:"warnings,omitempty"`
}

// Compare compares every metric between A and B (and tests all inputs
// together), corrects the primary test's p-values across metrics and gives
// each metric a verdict. Metrics are analysed in parallel; the result is
// deterministic for a given Options.Seed. Invalid options are replaced by
// their defaults with a report warning (call Options.Validate first to
// reject them instead).
func Compare(metrics []MetricInput, opt Options) Report {
	r, opt := compareAll(metrics, opt, nil)
	correctAndDecide([]*Report{&r}, opt)
	r.Geomeans = geomeans([]Report{r})
	return r
}

// compareAll is Compare up to the correction: every metric's statistics
// (those c kept from its last call taken from it), and the verdicts
// already decided without a p-value. It returns the options it used
// (defaults for invalid ones).
func compareAll(metrics []MetricInput, opt Options, c *Comparer) (Report, Options) {
	opt = opt.withDefaults()
	if opt.Designs == nil {
		opt.Designs = new(SequentialDesigns) // one design for all the metrics
	}
	var rwarn []string
	if err := opt.Validate(); err != nil {
		d := DefaultOptions()
		d.Seed, d.Labels, d.Designs = opt.Seed, opt.Labels, opt.Designs
		d.SkipUnpairedEstimates = opt.SkipUnpairedEstimates
		d.Primary, d.FirstIsPrimary = opt.Primary, opt.FirstIsPrimary
		if opt.ThresholdPct >= 0 && opt.ThresholdPct < 1e6 {
			d.ThresholdPct = opt.ThresholdPct
		}
		rwarn = append(rwarn, fmt.Sprintf("invalid options replaced by defaults: %v", err))
		opt = d
	}
	if opt.Primary == "" && opt.FirstIsPrimary && len(metrics) > 0 {
		opt.Primary = metrics[0].Name
	}
	r := Report{Alpha: opt.Alpha, Confidence: opt.Confidence, Correction: opt.Correction,
		PrimaryTest: opt.Test, Seed: opt.Seed, ThresholdPct: opt.ThresholdPct, Inputs: opt.Labels, Metrics: make([]MetricResult, len(metrics)),
		Warnings: rwarn}

	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i := range metrics {
		if m, ok := c.kept(metrics[i], opt); ok {
			r.Metrics[i] = m
			r.Metrics[i].weight = metrics[i].Weight
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			r.Metrics[i] = c.compareMetric(metrics[i], opt)
			r.Metrics[i].weight = metrics[i].Weight
			<-sem
		}()
	}
	wg.Wait()
	if len(r.Metrics) == 1 {
		r.KruskalWallisAll = r.Metrics[0].KruskalWallisAll
	}
	return r, opt
}

// correctAndDecide corrects the primary p-values of every metric of the
// reports by the family rule (family.go: the testable metrics; a primary
// at full α, the others corrected among themselves by opt.Correction),
// gives each metric its verdict and returns the number of members of the
// family, counted here only.
func correctAndDecide(reps []*Report, opt Options) (members int) {
	var ps []Float
	flat := make([]MetricResult, 0, len(reps))
	for _, r := range reps {
		for _, m := range r.Metrics {
			ps = append(ps, primaryP(m, opt.Test))
		}
		flat = append(flat, r.Metrics...)
	}
	fam := familyOf(flat, ps, opt.Primary)
	for i := range flat {
		m := &flat[i]
		if why := untestedReason(*m, ps[i]); why != "" {
			ps[i] = undefined() // not a member: no test, no share of alpha
			if m.untested != "" {
				untested(m) // its own warning says why
			}
		}
	}
	adj := fam.adjust(ps, flat, opt.Correction)
	// The floors of what each test could reach are judged within its
	// family too.
	guardFloors(flat, ps, fam, opt)
	correctMDEs(flat, fam, opt)
	familyLevels(flat, fam, adj, opt)
	k := 0
	for _, r := range reps {
		copy(r.Metrics, flat[k:k+len(r.Metrics)])
		k += len(r.Metrics)
		if fam.size[famPrimary] > 0 {
			r.Primary = opt.Primary
		}
	}
	k = 0
	for _, r := range reps {
		for i := range r.Metrics {
			m := &r.Metrics[i]
			m.PAdjusted = adj[k]
			k++
			if m.Verdict == "" {
				m.Verdict = decide(m, opt)
			} else {
				m.Decision.MoreTrials = undefined()
			}
			if m.Warnings == nil {
				m.Warnings = []string{}
			}
		}
		spentDesign(r, opt)
		warnPoolDisagreement(r.Metrics, opt.Alpha)
		warnDrift(r.Metrics, opt.Alpha)
	}
	return fam.members()
}

// spentDesign drops the "more rounds would decide" advice of a sequential
// report whose primary metric is decided: that is where "stop": "auto"
// stops, and a stopped run's design is spent (its other metrics are not
// watched by the stop rule, so more rounds of this run cannot be had).
func spentDesign(r *Report, opt Options) {
	if r.Primary == "" {
		return
	}
	decided := false
	for _, m := range r.Metrics {
		if m.Name == r.Primary && m.Decision.Method == MethodSequential && m.Verdict != VerdictInconclusive {
			decided = true
		}
	}
	if !decided {
		return
	}
	for i := range r.Metrics {
		if d := &r.Metrics[i].Decision; d.Method == MethodSequential {
			d.MoreTrials, d.CannotDecide = undefined(), ""
		}
	}
}

// untested makes m, which cannot be tested, inconclusive with no interval:
// an interval would claim a confidence that no test backs.
func untested(m *MetricResult) {
	m.Verdict = VerdictInconclusive
	d := &m.Decision
	d.CILowPct, d.CIHighPct, d.MoreTrials = undefined(), undefined(), undefined()
	d.Significant, d.BelowThreshold = false, false
}

// pFloor is the smallest p-value a metric's primary test can produce at
// its sample sizes (exact rank tests are discrete), with its explanation.
type pFloor struct {
	p    float64 // 0: no floor worth checking
	what string
	more string // what to collect more of: samples, rounds
}

// guardFloors makes inconclusive, with the reason, every undecided metric
// whose test could never reach alpha after the correction across the
// family of tested metrics (issue 16 item 1: 3 metrics of 4 values each
// give p ≥ 2/C(8,4) = 0.029 each, so Holm's smallest adjusted p is 0.086,
// and the raw-alpha guard let that pass as a verdict on too little data).
// The best a metric i can do is p_i at its floor f_i while every other
// metric is as significant as possible: Bonferroni then gives k·f_i;
// Holm's step-down gives at least k·min_j f_j (its first step, which every
// later one must pass) and at least f_i (its last step) (Holm 1979, "A
// simple sequentially rejective multiple test procedure", Scand. J.
// Statist. 6: 65–70).
// Each metric is judged within its own family (fam).
func guardFloors(ms []MetricResult, ps []Float, fam family, opt Options) {
	least := [2]float64{1, 1}
	for i, p := range ps {
		if g := fam.group[i]; p.Defined() && g != famNone {
			least[g] = math.Min(least[g], ms[i].floor.p)
		}
	}
	for i := range ms {
		m := &ms[i]
		f := m.floor
		if m.Verdict != "" || !ps[i].Defined() || f.p <= 0 || fam.group[i] == famNone {
			continue
		}
		k := fam.k(i)
		best := f.p
		switch {
		case k < 2 || opt.Correction == CorrectionNone:
		case opt.Correction == CorrectionWeightedBH:
			// Every other test rejected: R = k, its level α·min(1, w_i).
			best = math.Min(1, f.p/math.Min(1, fam.weight[i]))
		case opt.Correction == CorrectionBonferroni:
			best = math.Min(1, f.p*float64(k))
		case opt.Correction == CorrectionHolm:
			best = math.Min(1, math.Max(f.p, least[fam.group[i]]*float64(k)))
		}
		if best < opt.Alpha {
			continue
		}
		m.Verdict = VerdictInconclusive
		msg := "too few values for a verdict: " + f.what
		if best != f.p {
			msg += fmt.Sprintf("; after %s correction across %d tested metrics no adjusted p below %.3g is possible", opt.Correction, k, best)
		}
		msg += fmt.Sprintf(", not below alpha %g: collect more %s", opt.Alpha, f.more)
		if best != f.p {
			msg += " or test fewer metrics"
		}
		m.Warnings = append(m.Warnings, msg)
	}
}

func primaryP(m MetricResult, test string) Float {
	if m.Decision.Method == MethodSequential && m.Sequential != nil {
		return m.Sequential.P
	}
	if m.Paired != nil {
		return m.Paired.P
	}
	if test == TestWelch {
		return m.Welch.P
	}
	return m.MannWhitney.P
}

// metricSeed derives a metric's bootstrap seed from the run seed and the
// metric's identity, so a metric's interval does not depend on which other
// metrics are compared alongside it.
func metricSeed(seed uint64, name, unit string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write([]byte(unit))
	return seed ^ h.Sum64()
}

// warnings collects distinct warnings in order.
type warnings struct {
	list []string
	seen map[string]bool
}

func (w *warnings) add(prefix string, msgs ...string) {
	if w.seen == nil {
		w.seen = map[string]bool{}
	}
	for _, m := range msgs {
		if prefix != "" {
			m = prefix + m
		}
		if !w.seen[m] {
			w.seen[m] = true
			w.list = append(w.list, m)
		}
	}
}
