package analysis

import (
	"fmt"
	"math"
	"slices"
	"sync"
)

// Sequential decisions: the three verdicts a sequential analysis can stop
// on, or DecisionContinue.
const DecisionContinue = "continue"

// MethodSequential names the sequential analysis in decisions (Decision.Method).
const MethodSequential = "sequential: a look every round at the paired log ratios (see the sequential object)"

// The two sequential methods, as Sequential.Method names them.
const (
	SequentialMixture  = "t-mixture confidence sequence of the mean log ratio (Lai 1976)"
	SequentialSpending = "group-sequential repeated confidence interval of the mean log ratio, a look every round, O'Brien–Fleming-type alpha spending over %d rounds (Lan & DeMets 1983)"
	// SequentialSpendingTrimmed is SequentialSpending on the trimmed mean
	// (SequentialOptions.Trim: the share cut from each end, in %).
	SequentialSpendingTrimmed = "group-sequential repeated confidence interval of the %g%% trimmed mean log ratio (Yuen's standard error; Tukey & McLaughlin 1963, Yuen 1974), a look every round, O'Brien–Fleming-type alpha spending over %d rounds (Lan & DeMets 1983)"
)

// The guarantees the two methods give, as Sequential.Guarantee states them.
const (
	GuaranteeAnytime = "valid at any look and any stopping time"
	GuaranteeCapped  = "valid at every look up to max_trials (%d rounds): for a run stopped by this rule at or before the cap, not beyond it"
)

// DefaultMixtureG is the default prior variance g of the standardized
// effect δ = μ/σ of the mixture. The sequence is tightest for effects
// around |δ| ≈ 1 (a 1% change with the 1.1% per-round noise of the
// simulated phone with controls on); smaller g favours smaller effects.
const DefaultMixtureG = 1.0

// SequentialOptions configure the anytime-valid analysis.
type SequentialOptions struct {
	Alpha        float64 // error level: P(ever excluding the true change) ≤ Alpha
	ThresholdPct float64 // practical threshold in % (0: any change counts, never "no change")
	Better       string  // "lower" (default) or "higher"
	G            float64 // mixture variance of δ = μ/σ; 0 takes DefaultMixtureG
	// MaxRounds, when 2 … MaxCalibratedRounds, spends Alpha over at most
	// MaxRounds looks (a group-sequential design); else the t-mixture
	// sequence, valid without a cap but conservative under one.
	MaxRounds int
	// Trim, in [0, MaxTrim], is the share of the log ratios cut from each
	// end before the group-sequential design looks: 0 looks at their mean
	// (the paired t statistic), 0.2 at their 20% trimmed mean with Yuen's
	// standard error (TrimmedLocation). The t-mixture (no cap) always
	// looks at the mean.
	Trim float64
}

// MaxTrim is the largest share of the log ratios SequentialOptions.Trim
// cuts from each end (0.25: the interquartile mean).
const MaxTrim = 0.25

// DefaultSuiteTrim is the trimming of a benchmark suite's sequential
// analysis: one benchmark run of a few milliseconds now and then meets a
// context switch or a page fault burst and runs 1.5–2× long, and those
// rounds set a mean's spread (docs/suite.md: on VictoriaMetrics' lib/
// packages the log ratios' standard deviation was 2.5 times their MAD's
// normal equivalent, and the trimmed mean's standard error half the
// mean's).
const DefaultSuiteTrim = 0.2

// Sequential is the anytime-valid analysis of the per-round log ratios
// seen so far. Its interval and p-value stay valid however often they are
// looked at and whenever the experiment stops: with probability at least
// 1 − α the interval contains the true change at every look at once
// (a confidence sequence), and P(p ≤ α at some look) ≤ α when there is no
// change. The interval is the running intersection of the per-look
// intervals and p the running minimum, so the test and the interval agree:
// p ≤ α exactly when the interval excludes 0.
type Sequential struct {
	Method    string `json:"method"`
	Guarantee string `json:"guarantee"` // when the interval and p are valid
	N         int    `json:"n"`         // pairs seen
	DeltaPct  Float  `json:"delta_pct"` // mean log ratio as a change in %
	CILowPct  Float  `json:"ci_low_pct"`
	CIHighPct Float  `json:"ci_high_pct"`
	// P is the always-valid p-value (t-mixture) or the repeated p-value
	// (group-sequential): p ≤ α exactly when the interval excludes 0.
	P Float `json:"p"`
	// Decision is regression, improvement or no change once decided (the
	// interval excludes 0 with the estimate beyond the threshold, or lies
	// within ±threshold), else continue.
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
	// Trim is the share of the log ratios cut from each end
	// (SequentialOptions.Trim): Δ and the interval are of their trimmed
	// mean; 0, of their mean.
	Trim float64 `json:"trim,omitempty"`
	// trimmedSD is a trimmed analysis' standard error times √n: the
	// spread its minimum detectable effect is computed with (correctMDEs).
	trimmedSD float64
}

// Decided reports whether the sequential analysis has reached a verdict.
func (s Sequential) Decided() bool { return s.Decision != DecisionContinue }

// SequentialPaired runs the anytime-valid analysis on the per-round log
// ratios d (in round order), looking after every round.
//
// Method: for normal data with unknown variance, the Bayes factor of
// "mean θ" against a N(θ, g·σ²) mixture of alternatives with the
// right-Haar prior on σ has the closed form (Rouder et al. 2009, eq. 1 with
// fixed g)
//
//	BF_n(θ) = (1+ng)^(−1/2) · [(1 + t²/ν) / (1 + t²/((1+ng)ν))]^(n/2),
//	t = (mean − θ)/(s/√n), ν = n − 1,
//
// a nonnegative martingale under "mean θ" in the filtration of the
// scale-invariant data (Lai 1976, "On confidence sequences", Ann. Statist.
// 4: 265–280; Pérez-Ortiz, Lardy, de Heide & Grünwald 2024, "E-statistics,
// group invariance and anytime-valid testing", Ann. Statist.). By Ville's
// inequality P(∃n: BF_n(θ) ≥ 1/α) ≤ α, so {θ: BF_n(θ) < 1/α} is a
// confidence sequence (the t-interval with a wider, n-dependent critical
// value solved in closed form below) and p_n = min(1, 1/max_k BF_k(0)) an
// always-valid p-value (Johari et al. 2017, "Peeking at A/B tests"; Howard
// et al. 2021, "Time-uniform, nonparametric, nonasymptotic confidence
// sequences", Ann. Statist. 49: 1055–1080, for the general framework). The
// guarantee is exact for normal log ratios and approximate otherwise.
func SequentialPaired(d []float64, opt SequentialOptions) Sequential {
	return sequentialPairedOn(d, opt, sequentialDesign(opt))
}

// sequentialPairedOn is SequentialPaired on a precomputed design (nil: the
// t-mixture).
func sequentialPairedOn(d []float64, opt SequentialOptions, design *gsDesign) Sequential {
	st := newSequentialTest(opt, design)
	for _, x := range d {
		st.Add(x)
	}
	return st.Result()
}

// SequentialTest is SequentialPaired updated one round at a time, in O(1)
// per round (plus the design, computed once), for live panels and
// automatic stopping.
type SequentialTest struct {
	alpha, g, thr float64
	better        string
	n             int
	mean, m2      float64 // Welford's running moments
	lo, hi        float64 // running intersection of the per-look intervals (log scale)
	maxLogBF      float64 // t-mixture: running maximum of log BF(0); p = e^−maxLogBF
	logInvAlpha   float64
	design        *gsDesign // nil: the t-mixture
	obs           []float64 // design: each look's nominal two-sided t-test p (index: rounds)
	trim          float64   // design only: the share trimmed from each end (0: the mean)
	sorted        []float64 // trim > 0: the log ratios so far, in order
	est           float64   // trim > 0: the trimmed mean
	trimmedSD     float64   // trim > 0: its standard error times √n
}

// NewSequentialTest starts a sequential analysis with no rounds. With
// opt.MaxRounds in 2 … MaxCalibratedRounds it first computes the
// group-sequential design (about 10 ms for 100 rounds, 1 s for 1,000).
func NewSequentialTest(opt SequentialOptions) *SequentialTest {
	return newSequentialTest(opt, sequentialDesign(opt))
}

// sequentialDesign is the group-sequential design opt asks for, or nil
// for the t-mixture.
func sequentialDesign(opt SequentialOptions) *gsDesign {
	if opt.MaxRounds < 2 || opt.MaxRounds > MaxCalibratedRounds {
		return nil
	}
	return newGSDesign(validAlpha(opt.Alpha), opt.MaxRounds)
}

// SequentialDesigns keeps the group-sequential designs built so far, one
// per (alpha, max rounds), for a caller that analyses the same plan again
// and again: building one costs about 1 ms for 40 rounds, 10 ms for 200
// and 120 ms for 1,000, while a view that compares after every trial needs
// the same design each time. Set Options.Designs to one that lives as long
// as the view (engine.Options does); without it Compare shares a new one
// across its metrics. A design is a pure function of its key and is never
// changed once built (it only remembers the repeated p-value's work, in at
// most 8 MiB, and gives the same p-values), so sharing cannot change a
// result. The zero value is
// ready to use; it is safe for concurrent use and holds one design per
// distinct key (a plan has one).
type SequentialDesigns struct {
	mu sync.Mutex
	m  map[designKey]*designEntry
}

type designKey struct {
	alpha float64
	maxK  int
}

type designEntry struct {
	once   sync.Once
	design *gsDesign
}

// design is sequentialDesign(opt), built once per key. A nil c builds it
// afresh.
func (c *SequentialDesigns) design(opt SequentialOptions) *gsDesign {
	if c == nil || opt.MaxRounds < 2 || opt.MaxRounds > MaxCalibratedRounds {
		return sequentialDesign(opt)
	}
	key := designKey{alpha: validAlpha(opt.Alpha), maxK: opt.MaxRounds}
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[designKey]*designEntry)
	}
	e := c.m[key]
	if e == nil {
		e = &designEntry{}
		c.m[key] = e
	}
	c.mu.Unlock()
	// Metrics compared concurrently wait for the one build.
	e.once.Do(func() { e.design = newGSDesign(key.alpha, key.maxK) })
	return e.design
}

func validAlpha(a float64) float64 {
	if !(a > 0 && a < 1) {
		return 0.05
	}
	return a
}

// newSequentialTest starts a test on a precomputed design (nil: t-mixture),
// so that simulations share one design.
func newSequentialTest(opt SequentialOptions, d *gsDesign) *SequentialTest {
	t := &SequentialTest{alpha: validAlpha(opt.Alpha), g: opt.G, thr: opt.ThresholdPct, better: opt.Better,
		lo: math.Inf(-1), hi: math.Inf(1), design: d}
	t.logInvAlpha = math.Log(1 / t.alpha)
	if !(t.g > 0) {
		t.g = DefaultMixtureG
	}
	if d != nil {
		t.obs = []float64{1}
		t.trim = math.Min(math.Max(opt.Trim, 0), MaxTrim)
	}
	return t
}

// Add takes the log ratio of the next complete round and looks.
func (t *SequentialTest) Add(x float64) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return
	}
	t.n++
	if t.trim > 0 {
		t.addTrimmed(x)
		return
	}
	k := float64(t.n)
	delta := x - t.mean
	t.mean += delta / k
	t.m2 += delta * (x - t.mean)
	if t.n < 2 {
		if t.design != nil {
			t.obs = append(t.obs, 1)
		}
		return
	}
	nu := k - 1
	s2 := t.m2 / nu
	if t.design != nil {
		t.addSpending(k, s2)
		return
	}
	a := 1 + k*t.g
	loga := math.Log(a)
	// Bayes factor at θ = 0.
	var logBF float64
	switch {
	case s2 > 0:
		logBF = mixtureLogBF(k*t.mean*t.mean/s2/nu, a, loga, k)
	case t.mean != 0:
		logBF = (k - 1) / 2 * loga // t = ∞
	}
	t.maxLogBF = math.Max(t.maxLogBF, logBF)
	// Interval: |t| below the critical value where BF = 1/α.
	half := math.Inf(1)
	if u, ok := mixtureCritical(t.logInvAlpha, a, loga, k); ok {
		half = math.Sqrt(u * nu * s2 / k)
	}
	t.lo, t.hi = math.Max(t.lo, t.mean-half), math.Min(t.hi, t.mean+half)
}

// addSpending looks at round k of a group-sequential design: the repeated
// confidence interval mean ± c_k·s/√k with the look's t critical value,
// and the look's nominal p for the repeated p-value.
func (t *SequentialTest) addSpending(k, s2 float64) {
	crit := math.Inf(1)
	if t.n <= t.design.maxK {
		crit = t.design.tcrit[t.n]
	}
	t.look(t.mean, math.Sqrt(s2/k), k-1, crit)
}

// addTrimmed adds x to the trimmed analysis and looks: the trimmed mean
// and Yuen's standard error (TrimmedLocation), its t critical value at
// the look's level with h − 1 degrees of freedom for the h values kept.
// The design's levels hold for it as for the mean: a trimmed mean is
// asymptotically a sum of independent terms (its influence function's),
// so its standardized values at the looks have the joint law of the
// mean's (Jennison & Turnbull 2000, §11.3, for any such statistic).
func (t *SequentialTest) addTrimmed(x float64) {
	i, _ := slices.BinarySearch(t.sorted, x)
	t.sorted = slices.Insert(t.sorted, i, x)
	est, se, df := TrimmedLocation(t.sorted, t.trim)
	t.est, t.trimmedSD = est, se*math.Sqrt(float64(t.n))
	if t.n < 2 {
		t.obs = append(t.obs, 1)
		return
	}
	crit := math.Inf(1)
	if t.n <= t.design.maxK {
		crit = t.design.trimmedCrit(t.trim)[t.n]
	}
	t.look(est, se, df, crit)
}

// look records a look at estimate est with standard error se and df
// degrees of freedom whose critical value is crit: its nominal two-sided
// p, and its interval est ± crit·se intersected with the earlier ones.
func (t *SequentialTest) look(est, se, df, crit float64) {
	p := 1.0
	switch {
	case se > 0:
		p = 2 * studentTTail(math.Abs(est)/se, df)
	case est != 0:
		p = 0
	}
	t.obs = append(t.obs, p)
	half := math.Inf(1)
	switch {
	case math.IsInf(crit, 1):
	case se == 0:
		half = 0
	default:
		half = crit * se
	}
	if half > 2 { // a ratio beyond e^±2 (×7.4): no bound worth showing yet
		half = math.Inf(1)
	}
	t.lo, t.hi = math.Max(t.lo, est-half), math.Min(t.hi, est+half)
}

// TrimmedLocation is the trim-trimmed mean of sorted (ascending) values,
// its standard error and degrees of freedom, after Tukey & McLaughlin
// (1963), "Less vulnerable confidence and significance procedures for
// location based on a single sample: trimming/Winsorization 1", Sankhyā A
// 25: 331–352, and Yuen (1974), "The two-sample trimmed t for unequal
// population variances", Biometrika 61: 165–170: g = ⌊trim·n⌋ values are
// cut from each end, the mean of the h = n − 2g left is the estimate, and
// its standard error is s_w/((1 − 2·trim)·√n), s_w the standard deviation
// (n − 1 denominator) of the values Winsorized at the g-th from each end,
// with h − 1 degrees of freedom. References: scipy.stats.trim_mean and
// scipy.stats.mstats.trimmed_stde (trimmed_reference_test.go).
func TrimmedLocation(sorted []float64, trim float64) (est, se, df float64) {
	n := len(sorted)
	if n == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	est, ssw, h := Winsorized(sorted, trim)
	if n < 2 {
		return est, math.NaN(), math.NaN()
	}
	sw := math.Sqrt(ssw / float64(n-1))
	return est, sw / ((1 - 2*trim) * math.Sqrt(float64(n))), float64(h - 1)
}

// Winsorized returns, for sorted (ascending, not empty) values, the mean
// of the h = n − 2g values left when g = ⌊trim·n⌋ are cut from each end
// (the trimmed mean) and the sum of squared deviations from their mean
// of the values Winsorized at the g-th from each end (each value below
// the lowest kept set to it, each above the highest to it): the two sums
// trimmed statistics are built from (TrimmedLocation; Yuen's two-sample
// t and the effect floor of analysis/changepoint).
func Winsorized(sorted []float64, trim float64) (tm, ssw float64, h int) {
	n := len(sorted)
	g := int(trim * float64(n))
	kept := sorted[g : n-g]
	for _, x := range kept {
		tm += x
	}
	tm /= float64(len(kept))
	lo, hi := kept[0], kept[len(kept)-1]
	var wm float64
	for _, x := range sorted {
		wm += min(max(x, lo), hi)
	}
	wm /= float64(n)
	for _, x := range sorted {
		d := min(max(x, lo), hi) - wm
		ssw += d * d
	}
	return tm, ssw, len(kept)
}

// Decided reports whether the analysis has reached a verdict: Result's
// Decision without computing the p-value (which for a group-sequential
// design costs a few recursions).
func (t *SequentialTest) Decided() bool { return t.result(false).Decided() }

// Result is the analysis after the rounds added so far.
func (t *SequentialTest) Result() Sequential { return t.result(true) }

func (t *SequentialTest) result(withP bool) Sequential {
	s := Sequential{Method: SequentialMixture, Guarantee: GuaranteeAnytime, N: t.n, DeltaPct: undefined(), CILowPct: undefined(),
		CIHighPct: undefined(), P: Float(math.Exp(-t.maxLogBF)), Decision: DecisionContinue}
	if t.design != nil {
		s.Method = fmt.Sprintf(SequentialSpending, t.design.maxK)
		if t.trim > 0 {
			s.Method = fmt.Sprintf(SequentialSpendingTrimmed, t.trim*100, t.design.maxK)
		}
		s.Guarantee = fmt.Sprintf(GuaranteeCapped, t.design.maxK)
		s.P = undefined()
		if withP {
			p := t.design.repeatedP(t.obs)
			// Keep the test and the interval in step at α whatever the
			// rounding of the two routes (t critical value, nominal p).
			if t.lo > 0 || t.hi < 0 {
				p = math.Min(p, t.alpha)
			} else {
				p = math.Max(p, math.Nextafter(t.alpha, 1))
			}
			s.P = defined(p)
		}
	}
	if t.n == 0 {
		s.Reason = "no complete rounds yet"
		return s
	}
	est := t.mean
	if t.trim > 0 {
		est, s.Trim, s.trimmedSD = t.est, t.trim, t.trimmedSD
	}
	s.DeltaPct = defined(math.Expm1(est) * 100)
	if !math.IsInf(t.lo, 0) && !math.IsInf(t.hi, 0) {
		s.CILowPct, s.CIHighPct = defined(math.Expm1(t.lo)*100), defined(math.Expm1(t.hi)*100)
	}
	if t.lo > t.hi { // only when the data are far from the model
		s.Reason = "the per-look intervals do not intersect: the log ratios are far from normal"
		return s
	}
	if !s.CILowPct.Defined() || !s.CIHighPct.Defined() {
		s.Reason = fmt.Sprintf("%d rounds are too few for a bounded sequential interval", t.n)
		return s
	}
	s.Decision, s.Reason = sequentialDecision(s, t.alpha, t.thr, t.better)
	return s
}

// mixtureLogBF is log BF for u = t²/ν, a = 1 + n·g (loga its log) and n
// observations.
func mixtureLogBF(u, a, loga, n float64) float64 {
	return -0.5*loga + n/2*math.Log((1+u)/(1+u/a))
}

// mixtureCritical solves mixtureLogBF(u, a, n) = log(1/α) for u = t²/ν:
// with K = (2/n)(log(1/α) + ½·log a), (1+u)/(1+u/a) = e^K gives
// u = (e^K − 1)/(1 − e^K/a). ok is false when no finite t reaches 1/α
// (e^K ≥ a: too few rounds for any interval).
func mixtureCritical(logInvAlpha, a, loga, n float64) (u float64, ok bool) {
	eK := math.Exp(2 / n * (logInvAlpha + 0.5*loga))
	if eK >= a {
		return 0, false
	}
	return (eK - 1) / (1 - eK/a), true
}

// sequentialDecision decides from an always-valid interval (in %).
func sequentialDecision(s Sequential, alpha, thr float64, better string) (string, string) {
	lo, hi, est := float64(s.CILowPct), float64(s.CIHighPct), float64(s.DeltaPct)
	excludes := lo > 0 || hi < 0
	switch {
	case excludes && math.Abs(est) >= thr:
		worse := lo > 0
		if better == BetterHigher {
			worse = !worse
		}
		v := VerdictImprovement
		if worse {
			v = VerdictRegression
		}
		return v, fmt.Sprintf("the sequential %g%% interval [%+.2f%%, %+.2f%%] excludes 0 (p %s ≤ %g)",
			(1-alpha)*100, lo, hi, FormatP(float64(s.P), alpha, 3), alpha)
	case thr > 0 && lo > -thr && hi < thr:
		return VerdictNoChange, fmt.Sprintf("the sequential interval [%+.2f%%, %+.2f%%] lies within ±%g%%", lo, hi, thr)
	case excludes:
		return DecisionContinue, fmt.Sprintf("significant but %+.2f%% is below the threshold of ±%g%%", est, thr)
	}
	return DecisionContinue, "the sequential interval still includes 0"
}
