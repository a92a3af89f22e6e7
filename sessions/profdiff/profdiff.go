// Package profdiff is the differential profile of a session with
// statistics: for each function, its time per trial in A and B (its share
// of the trial's samples times the trial's measured time), and a paired
// test over the rounds with the verdicts of every other comparison
// (analysis.Compare over one input per function, weighted
// Benjamini–Hochberg across the functions, each weighted by its share of
// the time: the error rate is spent where the time is). No profiler does
// this: pprof
// -diff_base, perf diff and the flame-graph diff views subtract two
// profiles without saying whether a function's change is larger than its
// run-to-run noise; perflab's many interleaved, paired trials of both
// builds are exactly what a per-function test needs.
package profdiff

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/google/pprof/profile"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/internal/elfsym"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
)

// Options of a differential profile.
type Options struct {
	// Cumulative compares each function's time with its callees' (a
	// sample counts for every function on its stack, once); else its own
	// (the leaf's).
	Cumulative bool
	// Phase keeps the samples of one phase of the app ("" all).
	Phase string
	// MaxIndex, when above 0, keeps the trials with an index below it (a
	// replay's position).
	MaxIndex int
	// MinSamples is the mean samples per trial a function needs in each
	// build to be tested (default DefaultMinSamples); rarer ones are
	// grouped. It also needs a sample in every trial (the per-round log
	// ratio of a zero is undefined).
	MinSamples float64
	// Analysis is the comparison's options (the plan's alpha and
	// confidence by default); the correction is weighted
	// Benjamini–Hochberg across functions (Weighting).
	Analysis *analysis.Options
	// Weighting is how the functions' tests share the error rate:
	// WeightShare (default), WeightSqrtShare or WeightFlat.
	Weighting string
	// Symbols, when set, names the frames the profiler left unnamed
	// (sessions.Symbolize) before they are folded: the binaries' own
	// symbols, their debug files, a build tree (perflab profile --symbols).
	Symbols *elfsym.Resolver
}

// Weightings of the functions' tests (analysis.CorrectionWeightedBH's
// weights): by each function's share of the view's time, by its square
// root, or all alike (Benjamini–Hochberg). bench/profilestudy compares
// them on the simulated phone; share is the default it picked
// (docs/profiles.md).
const (
	WeightShare     = "share"
	WeightSqrtShare = "sqrt-share"
	WeightFlat      = "flat"
)

// DeclaredFamily is the question perflab profile's verdicts answer with
// their stated error rate: self time over the whole launch, all phases.
// The other views (a phase, cumulative time) are exploratory: each is
// corrected within itself, not across the views an engineer flips
// through (Report.Family says which a report is).
const DeclaredFamily = "self time, all phases"

// DefaultMinSamples is the mean samples per trial below which a function
// is grouped with the rare ones: at 10 the Poisson noise of its count is
// about 30% per trial.
const DefaultMinSamples = 10

// Function is one function's comparison (the --json contract).
type Function struct {
	Name      string         `json:"name"`
	AMs       float64        `json:"a_ms"` // mean time per trial in A
	BMs       float64        `json:"b_ms"`
	DeltaMs   float64        `json:"delta_ms"`  // BMs − AMs
	DeltaPct  analysis.Float `json:"delta_pct"` // the paired estimate (Hodges–Lehmann of the log ratios)
	CILowPct  analysis.Float `json:"ci_low_pct"`
	CIHighPct analysis.Float `json:"ci_high_pct"`
	P         analysis.Float `json:"p"`
	PAdjusted analysis.Float `json:"p_adjusted"`
	Verdict   string         `json:"verdict"`
	// CILevel is the confidence of the interval: the false-coverage level
	// that matches the function's weighted test (1 − (1 − confidence)·
	// min(1, w·R/k), analysis' familyLevels).
	CILevel  float64 `json:"ci_level"`
	SamplesA int64   `json:"samples_a"` // over all of A's trials
	SamplesB int64   `json:"samples_b"`
	Tested   bool    `json:"tested"` // false for the group of rare functions
	// Callers and Callees are the functions that call it and that it
	// calls most, by samples over both builds (at most maxEdges each).
	Callers []Edge `json:"callers,omitempty"`
	Callees []Edge `json:"callees,omitempty"`
}

// Edge is a caller or callee with the samples of the calls.
type Edge struct {
	Name    string `json:"name"`
	Samples int64  `json:"samples"`
}

// maxEdges is how many callers and callees a function lists.
const maxEdges = 3

// Report is a session's differential profile.
type Report struct {
	Session    string   `json:"session"`
	Metric     string   `json:"metric"`     // the measured time the shares are scaled to
	Kind       string   `json:"kind"`       // "self" or "cumulative"
	Phase      string   `json:"phase"`      // "" all phases
	Phases     []string `json:"phases"`     // the phases the samples carry
	Pairs      int      `json:"pairs"`      // rounds with a profile of both builds
	Correction string   `json:"correction"` // across the tested functions
	Weighting  string   `json:"weighting"`  // the correction's weights (WeightShare, ...)
	Alpha      float64  `json:"alpha"`
	// Declared is true for the declared family's view (DeclaredFamily),
	// whose verdicts keep the false discovery rate at Alpha; false for an
	// exploratory view, corrected within itself only. Family says so in
	// words, for the screen.
	Declared bool   `json:"declared_family"`
	Family   string `json:"family"`
	// CILevel is the highest confidence of the functions' intervals
	// (each function's is its own, Function.CILevel): the false coverage
	// rate level of Benjamini & Yekutieli for the changes the weighted
	// BH reports (analysis' familyLevels), so that they agree with the
	// verdicts.
	CILevel float64 `json:"ci_level"`
	// TotalDeltaMs is the mean change per round of the view's time: the
	// measured time, or with a phase that phase's own time (TotalOf says
	// which). ExplainedPct is the share of it the reported functions' Δ
	// add up to; with cumulative time only the outermost reported
	// functions count (Explained: none of their callers, at any depth,
	// is reported), so nested time is not counted twice.
	TotalDeltaMs float64        `json:"total_delta_ms"`
	TotalOf      string         `json:"total_of"`
	ExplainedPct analysis.Float `json:"explained_pct"`
	Explained    []string       `json:"explained"`
	Tested       int            `json:"tested"` // functions tested
	Rare         int            `json:"rare"`   // functions grouped as too rare to test
	Functions    []Function     `json:"functions"`
	Notes        []string       `json:"notes"`
}

// trialProfile is one trial's time per function.
type trialProfile struct {
	ms      map[string]float64 // time per function (ms of the measured metric)
	samples map[string]int64
	total   float64 // the trial's measured time (ms)
	view    float64 // the time of the samples kept (the phase's, ms)
	phases  map[string]bool
	edges   map[[2]string]int64 // samples of {callee, caller}
}

// Analyze computes the differential profile of the session at path.
func Analyze(path string, opt Options) (*Report, error) {
	s, err := sessions.Load(path)
	if err != nil {
		return nil, err
	}
	plan := &s.Header.Plan
	aopt := analysis.DefaultOptions()
	if plan.Alpha > 0 {
		aopt.Alpha = plan.Alpha
	}
	if plan.Confidence > 0 {
		aopt.Confidence = plan.Confidence
	}
	if opt.Analysis != nil {
		aopt = *opt.Analysis
	}
	aopt.Correction, aopt.Primary, aopt.FirstIsPrimary = analysis.CorrectionWeightedBH, "", false
	aopt.Sequential, aopt.AnytimeValid, aopt.SkipUnpairedEstimates = false, false, true
	if opt.MinSamples <= 0 {
		opt.MinSamples = DefaultMinSamples
	}
	switch opt.Weighting {
	case "":
		opt.Weighting = WeightShare
	case WeightShare, WeightSqrtShare, WeightFlat:
	default:
		return nil, fmt.Errorf("unknown weighting %q (%s, %s or %s)", opt.Weighting, WeightShare, WeightSqrtShare, WeightFlat)
	}
	r := &Report{Session: path, Kind: "self", Phase: opt.Phase, Correction: aopt.Correction, Weighting: opt.Weighting, Alpha: aopt.Alpha,
		Functions: []Function{}, Notes: []string{}, Phases: []string{}, Explained: []string{}}
	if opt.Cumulative {
		r.Kind = "cumulative"
	}
	r.Declared = !opt.Cumulative && opt.Phase == ""
	r.Family = "declared family: " + DeclaredFamily
	if !r.Declared {
		view := r.Kind + " time"
		if opt.Phase != "" {
			view += ", phase " + opt.Phase
		}
		r.Family = fmt.Sprintf("exploratory view (%s): corrected within this view only, not across views; the declared family is %s", view, DeclaredFamily)
	}
	r.TotalOf = "the launch"
	if opt.Phase != "" {
		r.TotalOf = "phase " + opt.Phase
	}
	var trials []*lab.Trial
	for _, e := range s.Events {
		if e.Type == lab.EventTrial && e.Trial != nil && e.Trial.Counted() && (opt.MaxIndex <= 0 || e.Trial.Index < opt.MaxIndex) {
			t := e.Trial
			switch {
			case t.Profile == nil:
			case t.Profile.File == "":
				r.Notes = append(r.Notes, fmt.Sprintf("trial %d: no profile (%s)", t.Index, t.Profile.Note))
			default:
				trials = append(trials, t)
			}
		}
	}
	if len(trials) == 0 {
		return nil, fmt.Errorf("%s: no trial has a profile (run the experiment with \"profile\": true or run --profile)", path)
	}
	r.Metric = timeMetric(plan, trials)
	profs := loadAll(path, trials, r.Metric, opt)
	phases := map[string]bool{}
	for i, t := range trials {
		if p := profs[i]; p.err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("trial %d: %v: left out", t.Index, p.err))
		} else {
			for ph := range p.phases {
				phases[ph] = true
			}
		}
	}
	for ph := range phases {
		r.Phases = append(r.Phases, ph)
	}
	sort.Strings(r.Phases)
	if opt.Phase != "" && !phases[opt.Phase] {
		return nil, fmt.Errorf("%s: no sample is in phase %q (phases: %s)", path, opt.Phase, strings.Join(r.Phases, ", "))
	}
	pairs := pairRounds(trials, profs)
	r.Pairs = len(pairs)
	if len(pairs) < 2 {
		return nil, fmt.Errorf("%s: %d rounds have a profile of both builds; at least 2 are needed for a paired test", path, len(pairs))
	}
	compare(r, pairs, opt, aopt)
	return r, nil
}

// timeMetric is the measured time the shares are scaled to: the plan's
// primary metric when its unit is a time, else the first time metric of
// the trials; "" scales to the samples' own time.
func timeMetric(plan *lab.Experiment, trials []*lab.Trial) string {
	want := plan.PrimaryMetric()
	for _, m := range trials[0].Metrics {
		if msPer(m.Unit) > 0 && (want == "" || m.Name == want) {
			return m.Name
		}
	}
	for _, m := range trials[0].Metrics {
		if msPer(m.Unit) > 0 {
			return m.Name
		}
	}
	return ""
}

// msPer is how many milliseconds one unit is; 0 for no time unit.
func msPer(unit string) float64 {
	switch unit {
	case "ms":
		return 1
	case "s":
		return 1000
	case "us", "µs":
		return 1e-3
	case "ns":
		return 1e-6
	}
	return 0
}

type loaded struct {
	trialProfile
	err error
}

// loadAll reads the trials' profiles in parallel.
func loadAll(path string, trials []*lab.Trial, metric string, opt Options) []loaded {
	out := make([]loaded, len(trials))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, t := range trials {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			p, err := sessions.LoadTrialProfile(path, t.Profile)
			if err != nil {
				out[i].err = err
				return
			}
			if opt.Symbols != nil {
				sessions.Symbolize(p, opt.Symbols)
			}
			out[i].trialProfile, out[i].err = fold(p, t, metric, opt)
		}()
	}
	wg.Wait()
	return out
}

// fold sums a trial's samples per function (self: the leaf; cumulative:
// every function on the stack once), in the phase asked for, as shares of
// all its samples times its measured time.
func fold(p *profile.Profile, t *lab.Trial, metric string, opt Options) (trialProfile, error) {
	tp := trialProfile{ms: map[string]float64{}, samples: map[string]int64{}, phases: map[string]bool{}, edges: map[[2]string]int64{}}
	vi := len(p.SampleType) - 1 // cpu nanoseconds, the last value
	var all, kept float64
	ns := map[string]float64{}
	seen := map[string]bool{}
	for _, s := range p.Sample {
		if len(s.Value) <= vi || len(s.Location) == 0 {
			continue
		}
		w := float64(s.Value[vi])
		all += w
		ph := ""
		if v := s.Label["phase"]; len(v) > 0 {
			ph = v[0]
			tp.phases[ph] = true
		}
		if opt.Phase != "" && ph != opt.Phase {
			continue
		}
		kept += w
		count := s.Value[0] // samples (ToPprof sums a stack's samples)
		for i := 0; i+1 < len(s.Location); i++ {
			tp.edges[[2]string{rowName(s.Location[i]), rowName(s.Location[i+1])}] += count
		}
		if !opt.Cumulative {
			name := rowName(s.Location[0])
			ns[name] += w
			tp.samples[name] += count
			continue
		}
		clear(seen)
		for _, l := range s.Location {
			name := rowName(l)
			if !seen[name] {
				seen[name] = true
				ns[name] += w
				tp.samples[name] += count
			}
		}
	}
	if all <= 0 {
		return tp, fmt.Errorf("the profile has no samples")
	}
	tp.total = all / 1e6
	if metric != "" {
		tp.total = math.NaN()
		for _, m := range t.Metrics {
			if m.Name == metric {
				tp.total = m.Value * msPer(m.Unit)
			}
		}
		if !(tp.total > 0) {
			return tp, fmt.Errorf("no %s to scale the profile to", metric)
		}
	}
	for name, v := range ns {
		tp.ms[name] = v / all * tp.total
	}
	tp.view = kept / all * tp.total
	return tp, nil
}

// rowName is the row of the table a location is counted in: its
// function, or for a frame no symbol names its binary's one row, "gzip
// (unsymbolized)", rather than hundreds of addresses tested one by one.
func rowName(l *profile.Location) string { return elfsym.Group(sessions.FuncName(l)) }

// pair is one round's profiles of A and B.
type pair struct{ a, b *trialProfile }

// pairRounds pairs the control's and the treatment's profiled trials of
// each round (and device, in a pool).
func pairRounds(trials []*lab.Trial, profs []loaded) []pair {
	type key struct {
		round  int
		device string
	}
	byRound := map[key]*pair{}
	var order []key
	for i, t := range trials {
		if profs[i].err != nil {
			continue
		}
		k := key{t.Round, t.Device}
		p := byRound[k]
		if p == nil {
			p = &pair{}
			byRound[k] = p
			order = append(order, k)
		}
		switch t.Arm {
		case lab.ArmControl:
			p.a = &profs[i].trialProfile
		case lab.ArmTreatment:
			p.b = &profs[i].trialProfile
		}
	}
	var out []pair
	for _, k := range order {
		if p := byRound[k]; p.a != nil && p.b != nil {
			out = append(out, *p)
		}
	}
	return out
}

// compare tests every function common enough, groups the rest, and sorts
// the functions: the reported ones first, each group by its contribution
// to the total change.
//
// The weights. Each tested function's weight is its share of the view's
// time (mean over both builds' trials pooled), or the square root of it,
// rescaled by analysis to average 1: weighted Benjamini–Hochberg
// (Genovese, Roeder & Wasserman 2006, "False discovery control with
// p-value weighting", Biometrika 93: 509–524) then gives a function
// holding 5% of a launch's time among a hundred tested about five times
// the flat share of the error rate, and the long tail of small functions,
// whose changes matter little to the launch, less. Genovese et al.'s
// guarantee needs weights that do not depend on the tests' outcomes; a
// share pooled over A and B of each round is unchanged when a round's A
// and B swap, and under no change the signed-rank test's null
// distribution is exactly those swaps, so the weights are fixed given
// what the test conditions on. bench/profilestudy measured share against
// its square root and flat BH (docs/profiles.md).
//
// The sampling noise. A function's time in a trial is its share of the
// trial's samples times the trial's time, so it carries the sampling
// noise of its count (about Poisson: a relative sd of 1/√n for n
// samples) on top of the run-to-run variation of its work. It is not
// modelled separately, because the test does not need it: the paired
// signed-rank test compares each round's B with its A by the observed
// log ratio, and its null distribution is the swaps within rounds, which
// holds for any noise that is alike for A and B, sampling noise
// included; the noise widens the spread of the log ratios and so the
// interval, never the false-report rate. What a higher sampling rate buys
// is power: at 20 kHz of simulated time (sim) a function holding 5.6% of
// a 694 ms launch gets ~780 samples a trial (±3.6%), at perflab's perf -F
// 4000 or simpleperf -f 4000 ~156 (±8.0%), and the rounds a change needs
// grow with the variance of a round's log ratio, here 4.7 times
// (docs/profiles.md has the measured detection rates).
func compare(r *Report, pairs []pair, opt Options, aopt analysis.Options) {
	names := map[string]bool{}
	for _, p := range pairs {
		for n := range p.a.ms {
			names[n] = true
		}
		for n := range p.b.ms {
			names[n] = true
		}
	}
	var inputs []analysis.MetricInput
	var tested []Function
	rare := Function{Verdict: analysis.VerdictInconclusive, DeltaPct: undefined(), CILowPct: undefined(),
		CIHighPct: undefined(), P: undefined(), PAdjusted: undefined()}
	n := float64(len(pairs))
	for _, name := range sortedKeys(names) {
		f := Function{Name: name}
		in := analysis.MetricInput{Name: name, Unit: "ms", Samples: [][]float64{make([]float64, 0, len(pairs)), make([]float64, 0, len(pairs))}}
		every := true
		for _, p := range pairs {
			a, b := p.a.ms[name], p.b.ms[name]
			f.AMs += a / n
			f.BMs += b / n
			f.SamplesA += p.a.samples[name]
			f.SamplesB += p.b.samples[name]
			every = every && a > 0 && b > 0
			in.Samples[0], in.Samples[1] = append(in.Samples[0], a), append(in.Samples[1], b)
			in.Pairs = append(in.Pairs, analysis.Pair{A: a, B: b})
		}
		f.DeltaMs = f.BMs - f.AMs
		if !every || float64(f.SamplesA)/n < opt.MinSamples || float64(f.SamplesB)/n < opt.MinSamples {
			r.Rare++
			rare.AMs += f.AMs
			rare.BMs += f.BMs
			rare.SamplesA += f.SamplesA
			rare.SamplesB += f.SamplesB
			continue
		}
		in.Weight = (f.AMs + f.BMs) / 2
		switch opt.Weighting {
		case WeightSqrtShare:
			in.Weight = math.Sqrt(in.Weight)
		case WeightFlat:
			in.Weight = 1
		}
		inputs = append(inputs, in)
		tested = append(tested, f)
	}
	r.Tested = len(tested)
	addEdges(tested, pairs)
	if len(inputs) > 0 {
		rep := analysis.Compare(inputs, aopt)
		for i, m := range rep.Metrics {
			f := &tested[i]
			f.DeltaPct, f.CILowPct, f.CIHighPct = m.Decision.DeltaPct, m.Decision.CILowPct, m.Decision.CIHighPct
			f.P, f.PAdjusted, f.Verdict, f.Tested = analysis.TestedP(m, rep.PrimaryTest), m.PAdjusted, m.Verdict, true
			f.CILevel = m.Decision.Confidence
			r.CILevel = max(r.CILevel, m.Decision.Confidence)
		}
	}
	var totalA, totalB, explained float64
	for _, p := range pairs {
		totalA += p.a.view / n
		totalB += p.b.view / n
	}
	r.TotalDeltaMs = totalB - totalA
	reported := map[string]bool{}
	for _, f := range tested {
		if f.reported() {
			reported[f.Name] = true
		}
	}
	outer := reported
	if opt.Cumulative {
		outer = outermost(reported, pairs)
	}
	for _, f := range tested {
		if outer[f.Name] {
			explained += f.DeltaMs
			r.Explained = append(r.Explained, f.Name)
		}
	}
	r.ExplainedPct = undefined()
	if r.TotalDeltaMs != 0 {
		r.ExplainedPct = analysis.Float(explained / r.TotalDeltaMs * 100)
	}
	sort.SliceStable(tested, func(i, j int) bool {
		if ri, rj := tested[i].reported(), tested[j].reported(); ri != rj {
			return ri
		}
		return math.Abs(tested[i].DeltaMs) > math.Abs(tested[j].DeltaMs)
	})
	r.Functions = append(r.Functions, tested...)
	if r.Rare > 0 {
		rare.Name = fmt.Sprintf("(%d functions too rare to test)", r.Rare)
		rare.DeltaMs = rare.BMs - rare.AMs
		r.Functions = append(r.Functions, rare)
	}
}

// reported says whether f's verdict is a change.
func (f Function) reported() bool {
	return f.Verdict == analysis.VerdictRegression || f.Verdict == analysis.VerdictImprovement
}

func undefined() analysis.Float { return analysis.Float(math.NaN()) }

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
