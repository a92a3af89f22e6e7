package engine

import (
	"math"
	"time"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
)

// Fold folds a session's events, one at a time, into what every view shows
// and analyses: the metric inputs of the counted trials with the order mode
// of each value (sessions.Accumulator's Inputs and OrderModes), the
// trials, their counts and the progress. A live run, a replay, the
// headless CLI and the studies all fold with it, so they agree.
type Fold struct {
	sessions.Accumulator // the metric inputs
	plan                 lab.Experiment

	trials  []lab.Trial
	counts  sessions.Counts
	version int

	// progress
	warm, counted map[string]int
	failed        int
	trialT        float64 // T of the last trial
	firstT        float64 // T when trials started (the first trial's start)
	seen          bool
	lastT         float64
}

// NewFold returns a fold for a session of plan; plan's trials and warm-up
// give the progress its total.
func NewFold(plan *lab.Experiment) *Fold {
	f := &Fold{
		warm: map[string]int{}, counted: map[string]int{},
		counts: sessions.NewCounts(),
	}
	if plan != nil {
		f.plan = *plan
		f.Accumulator.Arms = len(plan.ArmKeys())
		f.counts = sessions.NewCounts(plan.ArmKeys()...)
	}
	return f
}

// Add folds one event.
func (f *Fold) Add(e lab.Event) {
	f.Accumulator.Add(e)
	if e.T > f.lastT {
		f.lastT = e.T
	}
	if e.Type != lab.EventTrial || e.Trial == nil {
		return
	}
	tr := e.Trial
	f.trials = append(f.trials, *tr)
	f.counts.Add(tr)
	if !f.seen {
		f.seen = true
		f.firstT = e.T - tr.Duration
	}
	f.trialT = e.T
	switch {
	case tr.Warmup:
		f.warm[tr.Arm]++
	case tr.Status == lab.StatusOK:
		f.counted[tr.Arm]++
	}
	if tr.Status == lab.StatusFailed || tr.Status == lab.StatusTimeout {
		f.failed++
	}

	if _, ok := lab.ArmIndex(tr.Arm); ok && tr.Counted() {
		f.version++
	}
}

func clip[T any](s []T) []T { return s[:len(s):len(s)] }

// Trials returns every trial folded so far, in order.
func (f *Fold) Trials() []lab.Trial { return clip(f.trials) }

// Counts returns the trial counts by status, warm-up and arm.
func (f *Fold) Counts() sessions.Counts { return f.counts }

// Version counts the counted trials folded: an analysis computed at this
// version is current.
func (f *Fold) Version() int { return f.version }

// Progress returns how far the run has come and an ETA from the pace of
// its trials so far.
func (f *Fold) Progress() Progress {
	p := Progress{Total: planTotal(&f.plan), Failed: f.failed, Counted: map[string]int{}}
	for _, arm := range f.plan.ArmKeys() {
		p.Done += min(f.warm[arm], f.plan.Warmup*max(1, len(f.plan.Devices))) + min(f.counted[arm], f.plan.TrialCap())
		p.Counted[arm] = f.counted[arm]
	}
	p.Elapsed = seconds(f.lastT)
	if p.Done > 0 && p.Total >= p.Done {
		spent := f.trialT - f.firstT
		// Failed trials also take time; spread it over the useful ones.
		per := spent / float64(p.Done)
		p.ETA = seconds(per * float64(p.Total-p.Done))
	}
	return p
}

// planTotal is (warm-up + trials) per arm, saturating at math.MaxInt
// instead of overflowing into a negative total.
func planTotal(e *lab.Experiment) int {
	t, w, k := max(e.TrialCap(), 0), max(e.Warmup, 0), len(e.ArmKeys())
	if n := len(e.Devices); n > 1 && w <= math.MaxInt/(2*n) {
		w *= n // a pool warms up each device
	}
	if t > math.MaxInt/k-w-1 {
		return math.MaxInt
	}
	return k * (t + w)
}

// seconds converts to a Duration, saturating instead of overflowing.
func seconds(s float64) time.Duration {
	const max = float64(1<<63 - 1)
	d := s * float64(time.Second)
	switch {
	case d >= max:
		return time.Duration(1<<63 - 1)
	case d <= 0 || d != d:
		return 0
	}
	return time.Duration(d)
}

// Progress is how far a run has come, for progress bars and ETAs.
type Progress struct {
	Done    int           // trials done that move the run forward (warm-ups and counted trials)
	Total   int           // trials needed: (warm-up + trials) per arm
	Failed  int           // trials that failed or timed out (not counted)
	Elapsed time.Duration // since the run started
	ETA     time.Duration // estimated time left; 0 until the first trial
	Counted map[string]int
}

// Fraction is Done/Total in [0, 1].
func (p Progress) Fraction() float64 {
	if p.Total <= 0 {
		return 0
	}
	return min(1, float64(p.Done)/float64(p.Total))
}

// Options derives the analysis options of a session from its plan: the
// plan's α and confidence (defaults otherwise), the arms with their builds'
// names as labels, the base first. Every view (report, replay, the live dashboard, run
// --headless) uses them, so the same session gives the same numbers
// everywhere. For stop auto they carry a SequentialDesigns, so a caller
// that keeps them builds the group-sequential design once.
func Options(plan *lab.Experiment) analysis.Options {
	o := analysis.DefaultOptions()
	if plan.Alpha > 0 {
		o.Alpha = plan.Alpha
	}
	if plan.Confidence > 0 {
		o.Confidence = plan.Confidence
	}
	o.ThresholdPct = plan.Threshold
	// The family rule of every verdict (analysis/family.go): the plan's
	// primary metric, the one the stop rule watches, else the first
	// metric recorded.
	o.Primary, o.FirstIsPrimary = plan.PrimaryMetric(), true
	if plan.Suite != nil {
		// A suite's benchmarks are a list with no primary: the share of
		// false reports among them is what matters (Benjamini–Hochberg).
		o.Primary, o.FirstIsPrimary, o.Correction = "", false, analysis.CorrectionBH
	}
	o.Sequential = plan.Stop == lab.StopAuto
	if o.Sequential {
		o.SequentialMaxRounds, o.SequentialTrim = plan.MetricRoundsCap(), plan.SequentialTrim
		// Built once for every analysis done with these options (a view
		// analyses after every trial).
		o.Designs = new(analysis.SequentialDesigns)
	}
	for _, arm := range plan.ArmKeys() {
		o.Labels = append(o.Labels, plan.ArmLabel(arm))
	}
	return o
}
