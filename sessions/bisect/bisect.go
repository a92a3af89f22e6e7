// Package bisect finds the build that introduced a regression in an ordered
// range of builds (good first, bad last), Pinpoint-style: it first confirms
// that the ends differ (a regression verdict under the verdict rules, with
// the sequential stopping of "stop": "auto"), then binary
// searches, comparing each candidate with the lower end of the range still
// in doubt on the same device, controls and order. A comparison that ends
// undecided is run again with twice the trials, up to Attempts, before it is
// called inconclusive. Once a first bad build is found, its step is measured
// against its neighbour (the size of the step with its CI), and the rest of
// the range is checked for further steps.
//
// Every comparison is a regular session run through the engine (saved,
// replayable, reportable); the bisect itself is a Record, one JSON file
// that links them. The package knows nothing of the UI: progress is a
// stream of Events.
package bisect

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/engine"
)

// Candidate is one build of the range.
type Candidate struct {
	Name string `json:"name"`
	Rev  string `json:"rev,omitempty"` // the commit, for git ranges
	// Build is what the device runs; filled by Config.Resolve when empty.
	Build lab.Build `json:"build"`
}

// Config is one bisect.
type Config struct {
	// Candidates are the builds, good first, bad last (at least 2).
	Candidates []Candidate
	// Template is the experiment every comparison runs: device, controls,
	// order (alternate or random: rounds are analysed as pairs), warm-up,
	// metrics (the first one decides), alpha, seed. Its builds are replaced.
	Template lab.Experiment
	// Threshold is the practical threshold in % used by every comparison:
	// a comparison whose interval lies within ±Threshold is "no change",
	// which lets the sequential rule stop early on a step-free half. 0 takes
	// the template's threshold, and DefaultThreshold when that is 0 too.
	Threshold float64
	// MaxTrials caps the counted trials per arm of a comparison's first
	// attempt (default DefaultMaxTrials); attempt k gets 2^k times as many.
	MaxTrials int
	// Attempts is how many sessions an undecided comparison gets before it
	// is called inconclusive (default DefaultAttempts).
	Attempts int
	// MaxSteps bounds the steps looked for (default DefaultMaxSteps).
	MaxSteps int
	// Resolve turns a candidate without a Build into one (builds a commit);
	// called at most once per candidate, when a comparison first needs it.
	Resolve func(ctx context.Context, c Candidate) (lab.Build, error)
	// Plan fields for every session: Tool, Dir (session folder), Source.
	Tool, Dir, Source string
	// Realtime paces a simulated device at wall-clock speed.
	Realtime bool
}

// Defaults of Config.
const (
	DefaultThreshold = 0.5 // %
	DefaultMaxTrials = 100
	DefaultAttempts  = 2
	DefaultMaxSteps  = 3
)

// VerdictUnknown is the verdict of a comparison still inconclusive after
// every attempt: the analysis' own word, so that one outcome has one word
// everywhere (records written before issue 25 say "unknown", read alike).
const VerdictUnknown = analysis.VerdictInconclusive

// undecided reports whether a comparison's verdict decides nothing.
func undecided(v string) bool { return v == VerdictUnknown || v == "unknown" }

// Purposes of comparisons.
const (
	PurposeEnds   = "ends"   // good end against bad end
	PurposeSearch = "search" // a binary-search step
	PurposeStep   = "step"   // a first bad build against its predecessor
	PurposeRest   = "rest"   // a found step against the bad end: more steps?
)

// Comparison is one A/B comparison of two builds of the range (by index),
// run as one session per attempt.
type Comparison struct {
	A       int    `json:"a"`
	B       int    `json:"b"`
	Purpose string `json:"purpose"`
	// Verdict is the last attempt's verdict on the decisive metric, or
	// inconclusive when it still was after every attempt.
	Verdict   string         `json:"verdict"`
	Trials    int            `json:"trials"` // every trial run, all attempts
	DeltaPct  analysis.Float `json:"delta_pct"`
	CILowPct  analysis.Float `json:"ci_low_pct"`
	CIHighPct analysis.Float `json:"ci_high_pct"`
	Sessions  []string       `json:"sessions"` // session files, one per attempt
	// MedianA and MedianB are the builds' medians of the decisive metric
	// in the last attempt, in Unit.
	MedianA analysis.Float `json:"median_a"`
	MedianB analysis.Float `json:"median_b"`
	Unit    string         `json:"unit"`
	// Held says, for a comparison left inconclusive, what held it back.
	Held string `json:"held,omitempty"`
}

// Step is a regression found between a build and its predecessor.
type Step struct {
	Index     int            `json:"index"`
	Name      string         `json:"name"`
	Rev       string         `json:"rev"`
	Verdict   string         `json:"verdict"` // of the step's own comparison (regression when confirmed)
	DeltaPct  analysis.Float `json:"delta_pct"`
	CILowPct  analysis.Float `json:"ci_low_pct"`
	CIHighPct analysis.Float `json:"ci_high_pct"`
}

// Outcomes of a bisect. Each says what the ends' comparison showed, in
// the verdict words, so that the outcome never contradicts its numbers.
const (
	OutcomeCulprit = "culprit" // a first bad build was found
	// OutcomeNoDiff: the ends are shown equal within the threshold (their
	// verdict is no change, an equivalence result).
	OutcomeNoDiff = "ends do not differ"
	// OutcomeImproved: the bad end is significantly faster (improvement).
	OutcomeImproved = "the bad end is better"
	// OutcomeUndecided: the ends' comparison was still inconclusive after
	// every attempt; Record.Held says what held it back.
	OutcomeUndecided = "undecided"
	OutcomeCancelled = "cancelled" // stopped early; what was done is kept
	OutcomeFailed    = "failed"    // a session failed
)

// Format names a bisect record file.
const Format = "perflab-bisect"

// Record is a bisect: its builds, every comparison with its session files,
// and the result. It is what the bisect file holds.
type Record struct {
	Format      string       `json:"format"`
	Version     int          `json:"version"`
	Tool        string       `json:"tool,omitempty"`
	Device      string       `json:"device"`
	Metric      string       `json:"metric"`
	Threshold   float64      `json:"threshold_pct"`
	MaxTrials   int          `json:"max_trials"`
	Attempts    int          `json:"attempts"`
	Candidates  []Candidate  `json:"candidates"`
	Comparisons []Comparison `json:"comparisons"`
	Outcome     string       `json:"outcome"`
	// Held says, for an undecided outcome, what held the ends' comparison
	// back (its estimate, interval and MDE, and why they do not decide).
	Held        string         `json:"held,omitempty"`
	Error       string         `json:"error,omitempty"`
	FirstBad    *Step          `json:"first_bad"`
	OtherSteps  []Step         `json:"other_steps"`
	TrialsTotal int            `json:"trials_total"`
	Template    lab.Experiment `json:"template"`
}

// Event is one step of a bisect, for progress lines and live views.
type Event struct {
	// Kind is "start" (a comparison's attempt begins: Comparison, Attempt,
	// Session), "session" (one of that session's events: Item), "done"
	// (the comparison is decided: Comparison) or "step" (a step was found:
	// Step).
	Kind       string
	Comparison *Comparison
	Attempt    int
	Session    string
	Item       engine.Item
	Step       *Step
	// Lo and Hi bound the range still in doubt; Left is the builds in it
	// not yet ruled out (Hi−Lo−1). TrialsTotal counts trials so far.
	Lo, Hi, Left int
	TrialsTotal  int
	// Metric is the decisive metric's name (every event).
	Metric string
	// Plan and Device are the session's plan and device ("start" only),
	// for live views that fold the session's events.
	Plan   *lab.Experiment
	Device lab.DeviceInfo
}

// Kinds of events.
const (
	KindStart   = "start"
	KindSession = "session"
	KindDone    = "done"
	KindStep    = "step"
)

type bisector struct {
	l      engine.Lab
	cfg    Config
	emit   func(Event)
	rec    *Record
	cache  map[[2]int]*Comparison
	lo, hi int
	seq    int64 // sessions run, for distinct seeds
	builds map[int]lab.Build
}

// Run bisects cfg.Candidates with sessions started through l. emit (may be
// nil) gets every event in order. The record is returned, complete as far
// as the bisect got, also with an error (a failed session, a cancelled
// context).
func Run(ctx context.Context, l engine.Lab, cfg Config, emit func(Event)) (*Record, error) {
	if emit == nil {
		emit = func(Event) {}
	}
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	b := &bisector{l: l, cfg: cfg, emit: emit, cache: map[[2]int]*Comparison{}, builds: map[int]lab.Build{}}
	metric := ""
	if len(cfg.Template.Metrics) > 0 {
		metric = cfg.Template.Metrics[0]
	}
	b.rec = &Record{Format: Format, Version: 1, Tool: cfg.Tool, Device: strings.Join(cfg.Template.DeviceList(), ","), Metric: metric,
		Threshold: cfg.Threshold, MaxTrials: cfg.MaxTrials, Attempts: cfg.Attempts,
		Candidates: cfg.Candidates, Comparisons: []Comparison{}, OtherSteps: []Step{}, Template: cfg.Template}
	err := b.run(ctx)
	switch {
	case err == nil:
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		b.rec.Outcome = OutcomeCancelled
	default:
		b.rec.Outcome = OutcomeFailed
		b.rec.Error = err.Error()
	}
	return b.rec, err
}

func (c *Config) fill() error {
	if len(c.Candidates) < 2 {
		return fmt.Errorf("bisect: %d builds, want at least 2 (good first, bad last)", len(c.Candidates))
	}
	if c.Template.Order != lab.OrderAlternate && c.Template.Order != lab.OrderRandom {
		return fmt.Errorf(`order: %q; bisect needs "alternate" or "random" (its comparisons stop automatically on paired rounds)`, c.Template.Order)
	}
	if c.Threshold == 0 {
		c.Threshold = c.Template.Threshold
	}
	if c.Threshold == 0 {
		c.Threshold = DefaultThreshold
	}
	if !(c.Threshold > 0 && c.Threshold < 1e6) {
		return fmt.Errorf("threshold: %v, want a percentage above 0", c.Threshold)
	}
	if c.MaxTrials == 0 {
		c.MaxTrials = DefaultMaxTrials
	}
	if c.MaxTrials < 2 || c.MaxTrials > lab.MaxTrials {
		return fmt.Errorf("max trials: %d, want 2 to %d per arm", c.MaxTrials, lab.MaxTrials)
	}
	if c.Attempts == 0 {
		c.Attempts = DefaultAttempts
	}
	if c.Attempts < 1 || c.Attempts > 8 {
		return fmt.Errorf("attempts: %d, want 1 to 8", c.Attempts)
	}
	if c.MaxSteps == 0 {
		c.MaxSteps = DefaultMaxSteps
	}
	if c.Template.Alpha == 0 {
		c.Template.Alpha = lab.DefaultAlpha
	}
	if c.Template.Confidence == 0 {
		c.Template.Confidence = lab.DefaultConfidence
	}
	return nil
}

func (b *bisector) run(ctx context.Context) error {
	n := len(b.cfg.Candidates)
	b.lo, b.hi = 0, n-1
	ends, err := b.compare(ctx, 0, n-1, PurposeEnds, func(v string) (int, int) {
		if v == analysis.VerdictRegression {
			return 0, n - 1
		}
		return 0, 0 // nothing left to look for
	})
	if err != nil {
		return err
	}
	switch ends.Verdict {
	case analysis.VerdictRegression:
	case analysis.VerdictNoChange:
		b.rec.Outcome = OutcomeNoDiff
		return nil
	case analysis.VerdictImprovement:
		b.rec.Outcome = OutcomeImproved
		return nil
	default:
		b.rec.Outcome, b.rec.Held = OutcomeUndecided, ends.Held
		return nil
	}
	lo := 0
	for len(b.rec.OtherSteps)+1 <= b.cfg.MaxSteps {
		step, err := b.findFirst(ctx, lo, n-1)
		if err != nil {
			return err
		}
		if b.rec.FirstBad == nil {
			b.rec.FirstBad = &step
		} else {
			b.rec.OtherSteps = append(b.rec.OtherSteps, step)
		}
		b.emit(Event{Kind: KindStep, Step: &step, Lo: b.lo, Hi: b.hi, TrialsTotal: b.rec.TrialsTotal})
		if step.Index == n-1 || len(b.rec.OtherSteps)+1 >= b.cfg.MaxSteps {
			break
		}
		from := step.Index
		rest, err := b.compare(ctx, from, n-1, PurposeRest, func(v string) (int, int) {
			if v == analysis.VerdictRegression {
				return from, n - 1
			}
			return 0, 0
		})
		if err != nil {
			return err
		}
		if rest.Verdict != analysis.VerdictRegression {
			break
		}
		lo = step.Index
	}
	b.rec.Outcome = OutcomeCulprit
	return nil
}

// findFirst finds the first step after lo, knowing that hi regressed
// against lo: binary search with the invariant "lo not shown worse than
// the range's start, hi worse than lo". The step found is confirmed
// against its predecessor; a step that proves to be none (no change)
// resumes the search to its right.
func (b *bisector) findFirst(ctx context.Context, lo, hi int) (Step, error) {
	// his are the earlier upper ends, each worse than some lower end: when
	// the step found proves to be no step (a false regression moved hi
	// too far left), the search resumes between it and the previous hi.
	var his []int
	for recoveries := 0; ; recoveries++ {
		for hi-lo > 1 {
			b.lo, b.hi = lo, hi
			mid := lo + (hi-lo)/2
			c, err := b.compare(ctx, lo, mid, PurposeSearch, func(v string) (int, int) {
				switch {
				case v == analysis.VerdictRegression:
					return lo, mid
				case undecided(v):
					return lo, hi
				}
				return mid, hi
			})
			if err != nil {
				return Step{}, err
			}
			left := c.Verdict == analysis.VerdictRegression
			if undecided(c.Verdict) {
				// Undecided on the left half: ask the right half.
				r, err := b.compare(ctx, mid, hi, PurposeSearch, func(v string) (int, int) {
					if v == analysis.VerdictRegression {
						return mid, hi
					}
					return lo, mid
				})
				if err != nil {
					return Step{}, err
				}
				left = r.Verdict != analysis.VerdictRegression
			}
			if left {
				his = append(his, hi)
				hi = mid
			} else {
				lo = mid
			}
		}
		b.lo, b.hi = lo, hi
		c, err := b.compare(ctx, lo, hi, PurposeStep, func(string) (int, int) { return lo, hi })
		if err != nil {
			return Step{}, err
		}
		refuted := c.Verdict == analysis.VerdictNoChange || c.Verdict == analysis.VerdictImprovement
		if refuted && len(his) > 0 && recoveries < maxRecoveries {
			lo, hi = hi, his[len(his)-1]
			his = his[:len(his)-1]
			continue
		}
		cand := b.cfg.Candidates[hi]
		return Step{Index: hi, Name: cand.Name, Rev: cand.Rev, Verdict: c.Verdict,
			DeltaPct: c.DeltaPct, CILowPct: c.CILowPct, CIHighPct: c.CIHighPct}, nil
	}
}

// maxRecoveries bounds how often a search resumes after its step proved
// to be none.
const maxRecoveries = 2

// compare runs (or recalls) the comparison of builds a and b. after gives
// the range still in doubt once it has its verdict, for the event that
// reports it: the count of builds in doubt is then the one after this
// comparison, not before it.
func (b *bisector) compare(ctx context.Context, a, bi int, purpose string, after func(verdict string) (lo, hi int)) (*Comparison, error) {
	if c, ok := b.cache[[2]int{a, bi}]; ok {
		return c, nil
	}
	ba, err := b.build(ctx, a)
	if err != nil {
		return nil, err
	}
	bb, err := b.build(ctx, bi)
	if err != nil {
		return nil, err
	}
	nan := analysis.Float(math.NaN())
	b.rec.Comparisons = append(b.rec.Comparisons, Comparison{A: a, B: bi, Purpose: purpose, Verdict: VerdictUnknown,
		DeltaPct: nan, CILowPct: nan, CIHighPct: nan, MedianA: nan, MedianB: nan, Sessions: []string{}})
	idx := len(b.rec.Comparisons) - 1
	c := &b.rec.Comparisons[idx]
	cap := b.cfg.MaxTrials
	for attempt := 0; attempt < b.cfg.Attempts; attempt++ {
		exp := b.cfg.Template
		exp.Builds = map[string]lab.Build{lab.ArmControl: ba, lab.ArmTreatment: bb}
		exp.Stop = lab.StopAuto
		exp.MaxTrials = min(cap, lab.MaxTrials)
		exp.Trials = exp.MaxTrials
		exp.Threshold = b.cfg.Threshold
		exp.Seed = b.cfg.Template.Seed + b.seq*7919
		b.seq++
		verdict, m, trials, path, err := b.session(ctx, &exp, c, attempt)
		c = &b.rec.Comparisons[idx]
		c.Trials += trials
		b.rec.TrialsTotal += trials
		if path != "" {
			c.Sessions = append(c.Sessions, path)
		}
		if err != nil {
			return nil, err
		}
		if m != nil {
			c.DeltaPct, c.CILowPct, c.CIHighPct = m.Decision.DeltaPct, m.Decision.CILowPct, m.Decision.CIHighPct
			c.MedianA, c.MedianB, c.Unit = m.A.Median, m.B.Median, m.Unit
			c.Held = heldBack(*m, b.cfg.Threshold, exp.MaxTrials)
		}
		if verdict != analysis.VerdictInconclusive {
			c.Verdict, c.Held = verdict, ""
			break
		}
		cap *= 2
	}
	b.cache[[2]int{a, bi}] = c
	out := *c
	b.lo, b.hi = after(out.Verdict)
	b.emit(Event{Kind: KindDone, Comparison: &out, Lo: b.lo, Hi: b.hi, Left: max(0, b.hi-b.lo-1), TrialsTotal: b.rec.TrialsTotal})
	// The slice may grow: hand out a stable copy through the cache.
	cp := out
	b.cache[[2]int{a, bi}] = &cp
	return &cp, nil
}

// heldBack says what kept an inconclusive comparison of the decisive
// metric m from a verdict at its last cap (trials per arm): the note of
// its decision (estimate, interval, MDE) and the metric's warnings, all of
// them (picking some by their wording broke when the wording changed).
func heldBack(m analysis.MetricResult, threshold float64, cap int) string {
	parts := []string{fmt.Sprintf("still inconclusive at %d trials per arm", cap)}
	if n := analysis.DecisionNote(m, threshold); n != "" {
		parts = append(parts, strings.TrimPrefix(n, "inconclusive: "))
	}
	return strings.Join(append(parts, m.Warnings...), "; ")
}

// build returns candidate i's build, resolving it once.
func (b *bisector) build(ctx context.Context, i int) (lab.Build, error) {
	if bl, ok := b.builds[i]; ok {
		return bl, nil
	}
	c := b.cfg.Candidates[i]
	bl := c.Build
	if isZero(bl) {
		if b.cfg.Resolve == nil {
			return lab.Build{}, fmt.Errorf("build %d (%s): nothing to run", i, c.Name)
		}
		var err error
		if bl, err = b.cfg.Resolve(ctx, c); err != nil {
			return lab.Build{}, fmt.Errorf("build %d (%s): %w", i, c.Name, err)
		}
	}
	if bl.Name == "" {
		bl.Name = c.Name
	}
	b.builds[i] = bl
	b.rec.Candidates[i].Build = bl
	return bl, nil
}

func isZero(b lab.Build) bool {
	return len(b.Command) == 0 && b.App == "" && b.APK == "" && b.Package == ""
}

// session runs one attempt of a comparison as an engine session and
// analyses it as perflab report would (the plan's options: the
// sequential analysis is primary, since the run stopped automatically).
func (b *bisector) session(ctx context.Context, exp *lab.Experiment, c *Comparison, attempt int) (verdict string, m *analysis.MetricResult, trials int, path string, err error) {
	s, err := engine.Start(ctx, b.l, engine.Plan{Experiment: *exp, Tool: b.cfg.Tool, Source: b.cfg.Source,
		Dir: b.cfg.Dir, FreeName: true, Realtime: b.cfg.Realtime})
	if err != nil {
		return "", nil, 0, "", err
	}
	cc := *c
	plan := s.Header.Plan
	b.emit(Event{Kind: KindStart, Comparison: &cc, Attempt: attempt, Session: s.Path, Lo: b.lo, Hi: b.hi,
		Left: max(0, b.hi-b.lo-1), TrialsTotal: b.rec.TrialsTotal, Metric: b.rec.Metric, Plan: &plan, Device: s.Device})
	fold := engine.NewFold(&s.Header.Plan)
	for it := range s.Events {
		if it.Event.Type != "" {
			fold.Add(it.Event)
		}
		b.emit(Event{Kind: KindSession, Comparison: &cc, Attempt: attempt, Session: s.Path, Item: it,
			Lo: b.lo, Hi: b.hi, Left: max(0, b.hi-b.lo-1), TrialsTotal: b.rec.TrialsTotal + fold.Counts().Total, Metric: b.rec.Metric})
	}
	res := s.Wait()
	trials = res.Written.Total
	if res.Err != nil {
		return "", nil, trials, s.Path, res.Err
	}
	if err := engine.EndErr(res.End); err != nil {
		return "", nil, trials, s.Path, fmt.Errorf("session %s: %w", s.Path, err)
	}
	rep := analysis.Compare(fold.Inputs(), engine.Options(&s.Header.Plan))
	m = pick(rep, b.rec.Metric)
	if m == nil {
		return "", nil, trials, s.Path, fmt.Errorf("session %s: no counted trials of metric %q", s.Path, b.rec.Metric)
	}
	if b.rec.Metric == "" {
		b.rec.Metric = m.Name
	}
	return m.Verdict, m, trials, s.Path, nil
}

// pick returns the decisive metric: name, or the first when name is "".
func pick(rep analysis.Report, name string) *analysis.MetricResult {
	for i := range rep.Metrics {
		if name == "" || rep.Metrics[i].Name == name {
			return &rep.Metrics[i]
		}
	}
	return nil
}
