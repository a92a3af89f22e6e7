package lab

import "time"

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
	if p.Total == 0 {
		return 0
	}
	return min(1, float64(p.Done)/float64(p.Total))
}

// Tracker follows a run's events and estimates its progress.
type Tracker struct {
	exp     *Experiment
	warm    map[string]int
	counted map[string]int
	failed  int
	trialT  float64 // T of the last trial
	firstT  float64 // T when trials started (the first trial's start)
	seen    bool
	lastT   float64
}

// NewTracker returns a tracker for a run of exp.
func NewTracker(exp *Experiment) *Tracker {
	return &Tracker{exp: exp, warm: map[string]int{}, counted: map[string]int{}}
}

// Add records one event.
func (t *Tracker) Add(e Event) {
	t.lastT = e.T
	if e.Type != EventTrial || e.Trial == nil {
		return
	}
	tr := e.Trial
	if !t.seen {
		t.seen = true
		t.firstT = e.T - tr.Duration
	}
	t.trialT = e.T
	switch {
	case tr.Warmup:
		t.warm[tr.Arm]++
	case tr.Status == StatusOK:
		t.counted[tr.Arm]++
	}
	if tr.Status != StatusOK {
		t.failed++
	}
}

// Progress returns the current estimate.
func (t *Tracker) Progress() Progress {
	p := Progress{Total: 2 * (t.exp.Trials + t.exp.Warmup), Failed: t.failed, Counted: map[string]int{}}
	for _, arm := range []string{ArmControl, ArmTreatment} {
		p.Done += min(t.warm[arm], t.exp.Warmup) + min(t.counted[arm], t.exp.Trials)
		p.Counted[arm] = t.counted[arm]
	}
	p.Elapsed = time.Duration(t.lastT * float64(time.Second))
	if p.Done > 0 {
		spent := t.trialT - t.firstT
		// Failed trials also take time; spread it over the useful ones.
		per := spent / float64(p.Done)
		p.ETA = time.Duration(per * float64(p.Total-p.Done) * float64(time.Second))
	}
	return p
}
