package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"
)

// MaxConsecutiveFailures is how many failed trials in a row of one arm end a
// run: a command that always fails should stop the run, not spin forever.
const MaxConsecutiveFailures = 5

// ErrFinished is returned by live controls once the run has ended.
var ErrFinished = errors.New("the run has ended")

// Runner executes an experiment on a device and emits every event (settings,
// trials, toggles, notes, end) on the channel Run returns. The session writer
// and the UI consume the same stream.
//
// The live controls (SetOrder, SetControls, Pause, Resume, AddNote) are safe
// to call from any goroutine while the run goes on; each is recorded as an
// event at once and takes effect from the next round.
type Runner struct {
	dev Device
	exp Experiment

	mu       sync.Mutex
	cond     *sync.Cond // signals queue and pause changes
	start    time.Time
	order    string
	controls Controls
	paused   bool
	round    int // the round in progress (or next to start)
	queue    []Event
	out      chan Event // set by Run
	sending  bool       // the emitter is sending a batch outside the lock
	started  bool
	finished bool // no more events will be queued
	now      func() time.Time
	gate     func(ctx context.Context) // see setTrialGate
	rounds   RoundSource               // see SetRoundSource
	wanted   func() map[string]bool    // see setWanted
	roundSeq func(round int) int       // see setRoundSeq
	rec      Recorder                  // see SetRecorder
	held     bool                      // queue ends with a trial event not yet handed on (see hold)
	handedOn time.Time                 // when held events were last handed on
	handOff  *time.Timer               // hands held events on when trials come faster than handOffEvery
	every    time.Duration             // handOffEvery, or as SetHandOffEvery says
	armed    bool                      // handOff is set to fire
}

// Recorder records an event of a run where it is made: the runner (or
// pool) calls it with each event, in order, before the event is queued
// for Run's channel and before the run goes on. The engine writes the
// event to the session file there, so a trial is on disk before the next
// one starts (killing perflab loses at most the trial in flight) without a
// hand-off to another goroutine per trial. It is called with the runner's
// lock held: it must not call the runner. The recorder deals with its own
// errors (the engine cancels the run on the first failed write).
type Recorder func(Event)

// SetRecorder makes the runner call rec with every event. Call it before
// Run.
func (r *Runner) SetRecorder(rec Recorder) {
	r.mu.Lock()
	r.rec = rec
	r.mu.Unlock()
}

// TrialStartReporter is a device that calls TrialRequest.Started once each
// trial is under way (its reset procedure or its command running). For
// such a device the runner hands the previous trial's event on to the
// channel then, so waking the views overlaps the trial instead of delaying
// its start; when trials come faster than handOffEvery, their events go
// on together at most handOffEvery apart. On the local host, with trials
// of a millisecond, waking the views is a measurable share of the time per
// trial. Other devices get their events handed on before each trial.
type TrialStartReporter interface {
	ReportsTrialStart() bool
}

// RoundSource hands a runner its rounds when the runner is one device of a
// pool (see Pool): called at each round boundary, it blocks until the
// device may run another round and returns the round's number in the
// session, or ok false when the run is over (the plan is met, the
// sequential rule decided, or ctx ended). A runner with a source leaves
// when to stop to it: it neither counts trials against the plan nor
// applies the sequential rule itself, nor records its starting settings
// (the pool records them once for all its devices); it records each
// trial's start (EventStart), which the pool names with the device, and
// leaves saying that its device went away and came back to the pool.
type RoundSource func(ctx context.Context) (round int, ok bool)

// trialBuild is the build a trial runs: a suite's (Build.Bench) runs the
// benchmark of the seq-th counted round (BenchSpec.TrialCommand: the
// still wanted ones get the rounds); a warm-up runs every benchmark for one iteration
// (BenchSpec.WarmupCommand), which pages in the binaries and their data
// at the cost of their start-up (each worker of a pool warms up).
func trialBuild(b Build, seq int, warm bool, wanted map[string]bool) Build {
	switch {
	case b.Bench == nil:
	case warm:
		b.Command = b.Bench.WarmupCommand()
	default:
		b.Command = b.Bench.TrialCommand(seq, wanted)
	}
	return b
}

// SetRoundSource makes the runner take its rounds from src. Call it
// before Run.
func (r *Runner) SetRoundSource(src RoundSource) {
	r.mu.Lock()
	r.rounds = src
	r.mu.Unlock()
}

// setWanted makes the runner ask wanted, before each round, which
// benchmarks of a suite the run still wants (nil: all); a pool's devices
// ask the pool's stop rule. Call it before Run.
func (r *Runner) setWanted(wanted func() map[string]bool) {
	r.mu.Lock()
	r.wanted = wanted
	r.mu.Unlock()
}

// setRoundSeq makes the runner ask seq for the place of a counted round
// among the run's counted rounds (a pool's, whose round numbers its
// devices' warm-ups share); alone it is the round less the warm-ups.
// Call it before Run.
func (r *Runner) setRoundSeq(seq func(round int) int) {
	r.mu.Lock()
	r.roundSeq = seq
	r.mu.Unlock()
}

// setTrialGate makes the runner call gate before each trial and start the
// trial when it returns; gate should return promptly once ctx ends. A
// pool holds a device's trial there until the pool has recorded the
// device's trials before it (see Pool.SetRecorder). Events are handed on
// before the gate is called. Call it before Run.
func (r *Runner) setTrialGate(gate func(ctx context.Context)) {
	r.mu.Lock()
	r.gate = gate
	r.mu.Unlock()
}

// NewRunner returns a runner of exp on dev. exp is copied; it should have
// passed Validate. The runner calls dev.Setup and RunTrial; closing dev
// after the run is the caller's job.
func NewRunner(dev Device, exp *Experiment) *Runner {
	r := &Runner{dev: dev, exp: *exp, order: exp.Order, controls: exp.Controls, now: time.Now, every: handOffEvery}
	if r.order == "" {
		r.order = DefaultOrder
	}
	r.cond = sync.NewCond(&r.mu)
	return r
}

// Run starts the run and returns its events. The channel is closed after the
// end event; the consumer must read until then (to stop early, cancel ctx
// and keep reading: the end event follows promptly). Cancelling ctx stops
// the trial in flight and ends the run with reason "cancelled". Run may be
// called once.
func (r *Runner) Run(ctx context.Context) <-chan Event {
	out := make(chan Event, 16)
	r.mu.Lock()
	if r.started {
		r.mu.Unlock()
		close(out)
		return out
	}
	r.started = true
	r.start = r.now()
	r.out = out
	r.mu.Unlock()

	go r.emit(out)
	go r.loop(ctx)
	return out
}

// emit moves queued events to out, in order, and closes out after the last.
// Most events skip it: pushLocked hands an event straight to out when
// nothing is queued before it and out has room, which saves a goroutine
// hand-off per trial; the queue takes over when the consumer lags, so
// pushing never blocks (live controls are called from UI code).
func (r *Runner) emit(out chan<- Event) {
	defer close(out)
	for {
		r.mu.Lock()
		for len(r.queue) == 0 && !r.finished {
			r.cond.Wait()
		}
		batch := r.queue
		r.queue = nil
		done := r.finished
		r.sending = len(batch) > 0
		r.mu.Unlock()
		for _, e := range batch {
			out <- e
		}
		r.mu.Lock()
		r.sending = false
		r.mu.Unlock()
		if done && len(batch) == 0 {
			return
		}
	}
}

// pushLocked stamps an event with the time since start and sends or queues
// it. Callers hold r.mu.
func (r *Runner) pushLocked(e Event) {
	e.T = r.now().Sub(r.start).Seconds()
	if r.rec != nil {
		r.rec(e)
	}
	r.held = false // queued behind held events, which go with it
	if len(r.queue) == 0 && !r.sending && r.out != nil {
		select {
		case r.out <- e:
			return
		default:
		}
	}
	r.queue = append(r.queue, e)
	r.cond.Broadcast()
}

func (r *Runner) push(e Event) {
	r.mu.Lock()
	r.pushLocked(e)
	r.mu.Unlock()
}

// hold is push for a trial's event on a device that reports its next
// trial's start: the event is recorded at once but queued without waking
// the emitter, until release (TrialRequest.Started, a pause, the next
// round's gate, or any other event pushed behind it).
func (r *Runner) hold(e Event) {
	r.mu.Lock()
	e.T = r.now().Sub(r.start).Seconds()
	if r.rec != nil {
		r.rec(e)
	}
	r.queue = append(r.queue, e)
	r.held = true
	r.mu.Unlock()
}

// handOffEvery is the least time between two hand-offs of held trial
// events at a trial's start, by default: a view redraws at most every 16 ms
// or so, and a sub-millisecond trial should not pay for waking it each
// time.
const handOffEvery = 10 * time.Millisecond

// SetHandOffEvery sets the least time between two hand-offs of held trial
// events (see TrialStartReporter) to d; d ≤ 0 keeps the default, 10 ms,
// which suits a live workbench. A view that redraws less often asks for
// more: every hand-off wakes the views' goroutines while the next trial
// runs, which on a 2-core host costs a fast trial about 3% of its time
// (bench/run_overhead.sh). Events other than trials, a pause and the end
// still hand everything on at once. Call it before Run.
func (r *Runner) SetHandOffEvery(d time.Duration) {
	if d <= 0 {
		d = handOffEvery
	}
	r.mu.Lock()
	r.every = d
	r.mu.Unlock()
}

// releaseLocked hands held events on. Callers hold r.mu.
func (r *Runner) releaseLocked() {
	if r.held {
		r.held = false
		r.handedOn = time.Now()
		r.cond.Broadcast()
	}
}

// trialUnderWay is TrialRequest.Started for a TrialStartReporter: it hands
// held events on, or, within handOffEvery of the last hand-off, sets a
// timer to do it then.
func (r *Runner) trialUnderWay() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.held || r.armed {
		return
	}
	wait := r.every - time.Since(r.handedOn)
	if wait <= 0 {
		r.releaseLocked()
		return
	}
	r.armed = true
	if r.handOff == nil {
		r.handOff = time.AfterFunc(wait, r.timedRelease)
	} else {
		r.handOff.Reset(wait)
	}
}

func (r *Runner) timedRelease() {
	r.mu.Lock()
	r.armed = false
	r.releaseLocked()
	r.mu.Unlock()
}

// SetOrder changes the order mode from the next round.
func (r *Runner) SetOrder(mode string) error {
	if !ValidOrder(mode) {
		return fmt.Errorf("order %q: want fixed, alternate or random", mode)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return ErrFinished
	}
	if mode == r.order {
		return nil
	}
	r.pushLocked(Event{Type: EventToggle, Toggle: &Toggle{What: "order", From: r.order, To: mode, Round: r.nextRoundLocked()}})
	r.order = mode
	return nil
}

// Order returns the order mode in force for the next round.
func (r *Runner) Order() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.order
}

// Controls returns the controls in force for the next round.
func (r *Runner) Controls() Controls {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.controls
}

// SetControls replaces the controls from the next round. Each changed
// control is recorded as a toggle event, followed by a settings event with
// the new controls.
func (r *Runner) SetControls(c Controls) error {
	if err := c.Validate(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return ErrFinished
	}
	changes := DiffControls(r.controls, c)
	if len(changes) == 0 {
		return nil
	}
	next := r.nextRoundLocked()
	for _, ch := range changes {
		ch.Round = next
		t := ch
		r.pushLocked(Event{Type: EventToggle, Toggle: &t})
	}
	r.controls = c
	r.pushLocked(Event{Type: EventSettings, Settings: &Settings{Controls: cloneControls(&c), Detail: map[string]string{"from_round": strconv.Itoa(next)}}})
	return nil
}

// Pause stops the run at the next round boundary (the trials of the round
// in progress finish first).
func (r *Runner) Pause() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return ErrFinished
	}
	if r.paused {
		return nil
	}
	r.paused = true
	r.pushLocked(Event{Type: EventToggle, Toggle: &Toggle{What: "pause", From: "running", To: "paused", Round: r.nextRoundLocked()}})
	return nil
}

// Resume continues a paused run.
func (r *Runner) Resume() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return ErrFinished
	}
	if !r.paused {
		return nil
	}
	r.paused = false
	r.pushLocked(Event{Type: EventToggle, Toggle: &Toggle{What: "resume", From: "paused", To: "running", Round: r.round}})
	r.cond.Broadcast()
	return nil
}

// Paused reports whether the run is paused (or will pause at the next round).
func (r *Runner) Paused() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.paused
}

// AddNote records a free-text note.
func (r *Runner) AddNote(text string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return ErrFinished
	}
	r.pushLocked(Event{Type: EventNote, Note: &Note{Text: text}})
	return nil
}

// nextRoundLocked is the first round a change made now applies to.
func (r *Runner) nextRoundLocked() int {
	if !r.started {
		return 0
	}
	return r.round + 1
}

// DiffControls lists the controls that differ between a and b as toggles
// (What is the control's JSON name; From and To are JSON values).
func DiffControls(a, b Controls) []Toggle {
	var out []Toggle
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	t := va.Type()
	fields := jsonFields(t)
	for _, n := range slices.Sorted(maps.Keys(fields)) {
		f := fields[n]
		x, y := va.FieldByIndex(f.Index).Interface(), vb.FieldByIndex(f.Index).Interface()
		if sx, sy := jsonString(x), jsonString(y); sx != sy {
			out = append(out, Toggle{What: n, From: sx, To: sy})
		}
	}
	return out
}

func cloneControls(c *Controls) *Controls {
	x := *c
	return &x
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if s := string(b); s != "null" && s != "[]" {
		return s
	}
	return ""
}
