package lab

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
)

// arm bookkeeping for one build.
type armState struct {
	name        string
	warmupsDone int
	counted     int
	failRun     int // consecutive failures
	lastReason  string
}

func (a *armState) needs(exp *Experiment) bool {
	return a.warmupsDone < exp.Warmup || a.counted < exp.TrialCap()
}

// loop runs the experiment on the device: the settings and the device's
// setup, then round after round (from the pool's RoundSource, or until
// every arm has its trials or the stop rule decides) a trial of each arm
// that still needs one, in the round's order, until the end event.
func (r *Runner) loop(ctx context.Context) {
	// Wake a paused loop when ctx is cancelled.
	stop := context.AfterFunc(ctx, func() {
		r.mu.Lock()
		r.cond.Broadcast()
		r.mu.Unlock()
	})
	defer stop()
	l := r.startRun()
	if !l.setup(ctx) {
		return
	}
	for round := 0; ; round++ {
		var ok bool
		if round, ok = l.nextRound(ctx, round); !ok {
			return
		}
		order, controls, ok := l.roundBoundary(ctx, round)
		if !ok {
			return
		}
		todo := l.todo(order)
		if todo == nil {
			return
		}
		wanted := l.wantedBenches()
		for _, a := range todo {
			if !l.trial(ctx, a, round, order, controls, wanted) {
				return
			}
		}
	}
}

// runState is one run of Runner.loop: what it reads once from the runner, and
// what it counts as it goes.
type runState struct {
	r          *Runner
	counts     map[string]int
	src        RoundSource            // the pool's rounds; nil alone
	wantedFn   func() map[string]bool // the pool's benchmarks still wanted
	roundSeq   func(round int) int    // the pool's place of a counted round
	auto       *autoStop              // stop auto's rule (nil in a pool, which applies it to all its devices' rounds)
	gate       func(ctx context.Context)
	holdTrials bool // trial events wait for the next trial's start (see hold)
	rng        *rand.Rand
	arms       []*armState
	index      int // the next trial's index
}

// startRun reads the runner's settings for a run and records them (a pool
// records the settings of all its devices' runners once).
func (r *Runner) startRun() *runState {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := &runState{r: r, counts: map[string]int{}, src: r.rounds, wantedFn: r.wanted, roundSeq: r.roundSeq, auto: newAutoStop(&r.exp, 1), gate: r.gate,
		rng: rand.New(rand.NewPCG(uint64(r.exp.Seed), 0x9e3779b97f4a7c15))}
	if l.src != nil {
		l.auto = nil
	}
	reporter, _ := r.dev.(TrialStartReporter)
	l.holdTrials = l.gate == nil && reporter != nil && reporter.ReportsTrialStart()
	for _, k := range r.exp.ArmKeys() {
		l.arms = append(l.arms, &armState{name: k})
	}
	if l.src == nil {
		r.pushLocked(Event{Type: EventSettings, Settings: &Settings{
			Order:    r.order,
			Controls: cloneControls(&r.controls),
			Detail: map[string]string{
				"device":         r.dev.Info().ID,
				"trials_per_arm": strconv.Itoa(r.exp.Trials),
				"warmup":         strconv.Itoa(r.exp.Warmup),
				"seed":           strconv.FormatInt(r.exp.Seed, 10),
			},
		}})
	}
	return l
}

// end records the end event with the counts, and why stop auto stopped.
func (l *runState) end(reason string, err error) {
	e := &End{Reason: reason, Counts: l.counts}
	if l.auto != nil {
		e.Stop = l.auto.why(reason)
	}
	if err != nil {
		e.Error = err.Error()
	}
	r := l.r
	r.mu.Lock()
	r.pushLocked(Event{Type: EventEnd, End: e})
	r.finished = true
	if r.handOff != nil {
		r.handOff.Stop() // the end event took the held ones with it
	}
	r.cond.Broadcast()
	r.mu.Unlock()
}

// endUnlessCancelled ends the run for reason, or as cancelled when ctx
// ended (then the error is the cancellation's).
func (l *runState) endUnlessCancelled(ctx context.Context, reason string, err error) {
	if ctx.Err() != nil {
		l.end("cancelled", nil)
		return
	}
	l.end(reason, err)
}

// setup sets the device up and records what it says; false when the run
// ended there.
func (l *runState) setup(ctx context.Context) bool {
	r := l.r
	setupEvents, err := r.dev.Setup(ctx, &r.exp)
	for _, e := range setupEvents {
		r.push(e)
	}
	if err != nil {
		l.endUnlessCancelled(ctx, "error", fmt.Errorf("device setup: %w", err))
		return false
	}
	return true
}

// nextRound returns the round to run: round itself alone, the pool's next
// one in a pool; false when the pool has no more and the run ended.
func (l *runState) nextRound(ctx context.Context, round int) (int, bool) {
	if l.src == nil {
		return round, true
	}
	round, more := l.src(ctx)
	if !more {
		l.endUnlessCancelled(ctx, "completed", nil)
	}
	return round, more
}

// roundBoundary waits while the run is paused, then reads the live order
// and controls for the round; false when the run was cancelled and ended.
func (l *runState) roundBoundary(ctx context.Context, round int) (order string, controls Controls, ok bool) {
	r := l.r
	r.mu.Lock()
	r.round = round
	if r.paused {
		r.releaseLocked()
	}
	for r.paused && ctx.Err() == nil {
		r.cond.Wait()
	}
	order, controls = r.order, r.controls
	r.mu.Unlock()
	if ctx.Err() != nil {
		l.end("cancelled", nil)
		return order, controls, false
	}
	return order, controls, true
}

// todo returns the arms the round runs, in order: one trial of every arm
// that still needs one (every arm in a pool), only the first in fixed
// order, shuffled in random order. It returns nil when no arm needs a
// trial or the stop rule decided, and the run ended.
func (l *runState) todo(order string) []*armState {
	var todo []*armState
	for _, a := range l.arms {
		if l.src != nil || a.needs(&l.r.exp) {
			todo = append(todo, a)
		}
	}
	if l.src == nil && (len(todo) == 0 || l.auto.decided()) {
		l.end("completed", nil)
		return nil
	}
	switch order {
	case OrderFixed:
		todo = todo[:1]
	case OrderRandom:
		l.rng.Shuffle(len(todo), func(i, j int) { todo[i], todo[j] = todo[j], todo[i] })
	}
	return todo
}

// seqOf is the place of counted round among the run's counted rounds:
// the pool's, or alone the round less the warm-ups (which come first).
func (l *runState) seqOf(round int) int {
	if l.roundSeq != nil {
		return l.roundSeq(round)
	}
	return max(round-l.r.exp.Warmup, 0)
}

// wantedBenches returns the benchmarks of a suite still undecided (nil:
// all of them), by stop auto's rule alone or by the pool's.
func (l *runState) wantedBenches() map[string]bool {
	switch {
	case l.src == nil:
		return l.auto.wantedBenches()
	case l.wantedFn != nil:
		return l.wantedFn()
	}
	return nil
}

// trial runs one trial of arm a and records it, then deals with a lost
// device, cancellation and a run of failures; false when the run ended.
func (l *runState) trial(ctx context.Context, a *armState, round int, order string, controls Controls, wanted map[string]bool) bool {
	r := l.r
	req := l.request(a, round, controls, wanted)
	if l.gate != nil {
		l.gate(ctx)
	}
	if l.src != nil { // a pool's device: the pool shows its trial in progress
		r.push(Event{Type: EventStart, Start: &TrialStart{Round: round, Arm: a.name, Warmup: req.Warmup}})
	}
	t0 := r.now()
	res := r.dev.RunTrial(ctx, req)
	dur := r.now().Sub(t0).Seconds()
	if ctx.Err() != nil {
		// The run ended during the trial: its result may be cut
		// short, and a failure may be the cancellation's.
		res = TrialResult{Status: StatusInterrupted, Reason: "the run ended during the trial", Metrics: res.Metrics}
	}
	if res.Status == "" {
		res.Status = StatusFailed
		if res.Reason == "" {
			res.Reason = "device reported no status"
		}
	}
	tr := r.trialOf(req, res, order, dur)
	if l.holdTrials {
		r.hold(Event{Type: EventTrial, Trial: tr})
	} else {
		r.push(Event{Type: EventTrial, Trial: tr})
	}
	l.auto.add(tr)
	l.index++
	l.tally(a, res, req.Warmup)
	if res.Lost && ctx.Err() == nil && !l.reconnect(ctx, a, res.Reason) {
		return false
	}
	if ctx.Err() != nil {
		l.end("cancelled", nil)
		return false
	}
	if a.failRun >= MaxConsecutiveFailures {
		l.end("error", fmt.Errorf("%s: %d trials in a row failed; last: %s", a.name, a.failRun, a.lastReason))
		return false
	}
	return true
}

// request is the device's request for the next trial of arm a.
func (l *runState) request(a *armState, round int, controls Controls, wanted map[string]bool) TrialRequest {
	exp := &l.r.exp
	warm := a.warmupsDone < exp.Warmup
	req := TrialRequest{
		Index:    l.index,
		Round:    round,
		Arm:      a.name,
		BuildKey: a.name,
		Build:    trialBuild(exp.Builds[a.name], l.seqOf(round), warm, wanted),
		Warmup:   warm,
		Controls: controls,
		Metrics:  exp.Metrics,
		Profile:  exp.ProfiledRound(round) && !warm,
	}
	if l.holdTrials {
		req.Started = l.r.trialUnderWay
	}
	return req
}

// trialOf is the trial event's record of req's result: with its profile,
// or the note the recorder keeps when there is none.
func (r *Runner) trialOf(req TrialRequest, res TrialResult, order string, dur float64) *Trial {
	tr := &Trial{
		Index: req.Index, Round: req.Round, Arm: req.Arm, Build: buildName(r.exp.Builds[req.Arm], req.Arm),
		Warmup: req.Warmup, Order: order, Status: res.Status, Reason: res.Reason,
		Duration: dur, Metrics: res.Metrics, Host: res.Host,
	}
	if req.Profile {
		tr.ProfileRound = r.exp.ProfileEvery > 1
		tr.Profiled = res.Profile
		if res.Profile != nil {
			res.Profile.Label()
		}
		if res.Profile == nil || res.ProfileNote != "" {
			// The recorder writes the file and keeps the note.
			tr.Profile = &ProfileRef{Note: res.ProfileNote}
			if res.Profile == nil && res.ProfileNote == "" {
				tr.Profile.Note = "the device returned no profile"
			}
		}
	}
	if tr.Metrics == nil {
		tr.Metrics = []Metric{}
	}
	return tr
}

// tally counts a trial's result for the end event and for its arm: the
// warmups done, the counted trials, the run of consecutive failures.
func (l *runState) tally(a *armState, res TrialResult, warm bool) {
	l.counts[res.Status]++
	if warm {
		l.counts["warmup"]++
		a.warmupsDone++
	}
	if res.Status == StatusOK {
		a.failRun = 0
		if !warm {
			a.counted++
		}
		return
	}
	a.failRun++
	a.lastReason = res.Reason
}

// reconnect pauses the run until a lost device returns (the trial in
// flight was recorded as failed); false when it cannot come back and the
// run ended.
func (l *runState) reconnect(ctx context.Context, a *armState, reason string) bool {
	r := l.r
	rc, ok := r.dev.(Reconnector)
	if !ok {
		l.end("device-lost", errors.New(reason))
		return false
	}
	if l.src == nil { // a pool says it in its own device event and note
		r.push(Event{Type: EventNote, Note: &Note{Text: "device lost, run paused until it comes back: " + reason}})
	}
	if err := rc.Reconnect(ctx); err != nil {
		l.endUnlessCancelled(ctx, "device-lost", err)
		return false
	}
	if l.src == nil {
		r.push(Event{Type: EventNote, Note: &Note{Text: "device back, run resumed"}})
	}
	a.failRun = 0
	return true
}

func buildName(b Build, key string) string {
	if b.Name != "" {
		return b.Name
	}
	return key
}
