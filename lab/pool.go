package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Pool runs one experiment on several devices at once: each device runs
// whole rounds (one A and one B, in the order in force) under its own
// Runner, with its own setup and reset procedure, and the pool hands out
// rounds to the devices as they become free until the plan is met (Trials
// complete pairs) or the sequential rule (stop "auto") decides over the
// rounds of all devices. Its events are one session: every trial carries
// its Device, trial indexes run over the whole pool and round numbers are
// unique in it.
//
// A device that reports a trial Lost leaves the pool at once: its round
// no longer holds back the plan, so another device redoes it. When the
// device is a Reconnector its runner waits for it and it rejoins the pool
// when back; otherwise (or when its runner ends with an error, such as
// MaxConsecutiveFailures) it has left for good and the others go on. The
// run ends with an error only when every device has left.
//
// The pool records its devices' states as device events (offline, back,
// left; the notes that say so are for people) and each trial's start as
// a start event, so a view can show the trial in progress on each device.
//
// Real devices get rounds as they become free: whichever asks first. When
// every device runs on a free virtual clock (VirtualClock, the simulated
// phones in instant mode), the pool is a discrete-event schedule instead:
// one round runs at a time, and the next goes to the free device whose
// clock is earliest (ties to the device given first), after the earlier
// trials have been relayed. The same seed then gives the same session:
// the same rounds on the same devices, the same trial indexes and results.
//
// Pool has the live controls of Runner (SetOrder, SetControls, Pause,
// Resume, AddNote), recorded once for the pool and effective from the next
// round handed out. Fixed order is refused: rounds of one arm are no pairs.
type Pool struct {
	exp     Experiment
	members []*poolMember
	now     func() time.Time

	mu        sync.Mutex
	cond      *sync.Cond // round grants, pause, queue
	start     time.Time
	order     string
	controls  Controls
	paused    bool
	nextRound int
	pairs     int // complete counted rounds
	inflight  int // counted rounds handed out and not finished
	auto      *autoStop
	index     int // next trial index
	counts    map[string]int
	queue     []Event
	started   bool
	finished  bool
	rec       Recorder // see SetRecorder
	// setups holds, by position, the JSON of the setup settings the pool
	// recorded for all its devices (see forwardSettingsLocked).
	setups  []string
	virtual bool // every device runs on a free virtual clock: a discrete-event schedule
}

// poolMember is one device of a pool and its runner's round in progress.
type poolMember struct {
	id      string
	dev     Device
	exp     Experiment
	runner  *Runner
	granted int // rounds handed out, warm-ups included

	cur      int  // the round in progress, -1 between rounds
	curWarm  bool // it is a warm-up round
	released bool // the round no longer counts as in flight (the device was lost)
	results  []poolResult
	waiting  bool                 // in nextRoundFor, asking for a round
	relaying int                  // trial results not yet relayed into the pool's stream
	clock    func() time.Duration // the device's virtual clock (virtual pools)
	lost     bool
	end      *End
	cancel   context.CancelFunc // ends this device's runner (set by Run)
	setups   int                // setup settings events it reported
}

// poolResult is one trial of a member's round in progress, as the device
// returned it.
type poolResult struct {
	arm     string
	status  string
	metrics []Metric
}

// NewPool returns a pool running exp on devs (at least one). exp is
// copied; it should have passed Validate. Each device gets its own runner
// and, after the first, a seed of its own, so the devices' random orders
// and simulated noise differ. Closing the devices after the run is the
// caller's job.
func NewPool(devs []Device, exp *Experiment) *Pool {
	p := &Pool{exp: *exp, order: exp.Order, controls: exp.Controls, now: time.Now, counts: map[string]int{}}
	if p.order == "" {
		p.order = DefaultOrder
	}
	p.cond = sync.NewCond(&p.mu)
	p.auto = newAutoStop(&p.exp)
	p.virtual = len(devs) > 0
	for i, d := range devs {
		m := &poolMember{id: d.Info().ID, cur: -1}
		if vc, ok := d.(VirtualClock); ok {
			if _, free := vc.VirtualTime(); free {
				m.clock = func() time.Duration { t, _ := vc.VirtualTime(); return t }
			}
		}
		if m.clock == nil {
			p.virtual = false
		}
		m.exp = *exp
		m.exp.Seed = MemberSeed(exp.Seed, i)
		m.exp.Device, m.exp.Devices = m.id, nil
		m.dev = poolDevice(p, m, d)
		m.runner = NewRunner(m.dev, &m.exp)
		mm := m
		m.runner.SetRoundSource(func(ctx context.Context) (int, bool) { return p.nextRoundFor(ctx, mm) })
		m.runner.setWanted(p.wantedBenches)
		m.runner.setTrialGate(func(ctx context.Context) { p.waitRelayed(ctx, mm) })
		p.members = append(p.members, m)
	}
	return p
}

// MemberSeed is the seed of the i-th device of a pool whose experiment has
// seed: the experiment's own for the first, a different one (fixed by the
// seed and i) for each other.
func MemberSeed(seed int64, i int) int64 {
	if i == 0 {
		return seed
	}
	return seed + int64(i)*1_000_003
}

// SetRecorder makes the pool call rec with every event of its stream, in
// order, before it is queued for Run's channel (see Recorder). A device's
// trial starts only once the pool has recorded that device's trials
// before it, so killing perflab loses at most the trials in flight; the
// other devices are not held. Call it before Run.
func (p *Pool) SetRecorder(rec Recorder) {
	p.mu.Lock()
	p.rec = rec
	p.mu.Unlock()
}

// waitRelayed is m's trial gate: it returns once every trial result m's
// device returned is in the pool's stream (recorded), or ctx ends.
func (p *Pool) waitRelayed(ctx context.Context, m *poolMember) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m.relaying == 0 {
		return
	}
	stop := context.AfterFunc(ctx, func() {
		p.mu.Lock()
		p.cond.Broadcast()
		p.mu.Unlock()
	})
	for m.relaying > 0 && ctx.Err() == nil {
		p.cond.Wait()
	}
	stop()
}

// Devices returns the IDs of the pool's devices, in the order given.
func (p *Pool) Devices() []string {
	out := make([]string, len(p.members))
	for i, m := range p.members {
		out[i] = m.id
	}
	return out
}

// Run starts every device's runner and returns the pool's events; the
// channel closes after the end event. As Runner.Run: read until it
// closes; cancelling ctx ends the run with reason "cancelled".
func (p *Pool) Run(ctx context.Context) <-chan Event {
	out := make(chan Event, 64)
	p.mu.Lock()
	if p.started {
		p.mu.Unlock()
		close(out)
		return out
	}
	p.started = true
	p.start = p.now()
	if p.order == OrderFixed || len(p.members) == 0 {
		p.pushLocked(Event{Type: EventEnd, End: &End{Reason: "error", Error: "a pool needs at least one device and order alternate or random: each device runs whole rounds of one A and one B"}})
		p.finished = true
		p.mu.Unlock()
		go p.emit(out)
		return out
	}
	p.pushLocked(Event{Type: EventSettings, Settings: &Settings{
		Order:    p.order,
		Controls: cloneControls(&p.controls),
		Detail: map[string]string{
			"devices":        strings.Join(p.Devices(), ","),
			"trials_per_arm": strconv.Itoa(p.exp.Trials),
			"warmup":         strconv.Itoa(p.exp.Warmup),
			"seed":           strconv.FormatInt(p.exp.Seed, 10),
		},
	}})
	p.mu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		p.mu.Lock()
		p.cond.Broadcast()
		p.mu.Unlock()
	})
	go p.emit(out)
	var wg sync.WaitGroup
	for _, m := range p.members {
		mctx, cancel := context.WithCancel(ctx)
		p.mu.Lock()
		m.cancel = cancel
		p.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cancel()
			p.forward(m, m.runner.Run(mctx))
		}()
	}
	go func() {
		wg.Wait()
		stop()
		p.finish(ctx)
	}()
	return out
}

// forward relays one device's events into the pool's stream: trials and
// their starts get the device, trials a pool-wide index, notes name the device, the device's
// end becomes a device event (and a note) when it leaves early; its setup
// settings are recorded once for the pool (forwardSettingsLocked); the
// runner's records of live changes are dropped (the pool records them
// once).
func (p *Pool) forward(m *poolMember, events <-chan Event) {
	for ev := range events {
		switch ev.Type {
		case EventTrial:
			if ev.Trial == nil {
				continue
			}
			t := *ev.Trial
			t.Device = m.id
			p.mu.Lock()
			if m.relaying > 0 {
				m.relaying--
			}
			t.Index = p.index
			p.index++
			p.counts[t.Status]++
			if t.Warmup {
				p.counts["warmup"]++
			}
			ev.Trial = &t
			p.pushLocked(ev)
			p.mu.Unlock()
		case EventStart:
			if ev.Start == nil {
				continue
			}
			st := *ev.Start
			st.Device = m.id
			ev.Start = &st
			p.push(ev)
		case EventToggle:
			// recorded by the pool
		case EventSettings:
			if ev.Settings == nil || ev.Settings.Detail["from_round"] != "" {
				continue // a live change, recorded by the pool
			}
			p.mu.Lock()
			p.forwardSettingsLocked(m, ev)
			p.mu.Unlock()
		case EventNote:
			if ev.Note != nil {
				ev.Note = &Note{Text: m.id + ": " + ev.Note.Text}
			}
			p.push(ev)
		case EventEnd:
			p.mu.Lock()
			m.end = ev.End
			p.finishRoundLocked(m)
			if ev.End != nil && ev.End.Reason != "completed" && ev.End.Reason != "cancelled" {
				why := ev.End.Reason
				if ev.End.Error != "" {
					why += ": " + ev.End.Error
				}
				p.pushLocked(Event{Type: EventDevice, Device: &DeviceState{Device: m.id, State: DeviceLeft, Reason: why}})
				p.pushLocked(Event{Type: EventNote, Note: &Note{Text: fmt.Sprintf("%s left the pool (%s); the other devices go on", m.id, why)}})
			}
			p.cond.Broadcast()
			p.mu.Unlock()
		default:
			p.push(ev)
		}
	}
}

// forwardSettingsLocked records a device's setup settings once for the
// pool: the k-th settings event of each device is compared with the k-th
// the pool recorded (from whichever device reported it first); the same
// settings are dropped, different ones are recorded with the device's ID
// in Settings.Device. So a pool of alike devices says its settings once,
// and a device set up differently says how.
func (p *Pool) forwardSettingsLocked(m *poolMember, ev Event) {
	k := m.setups
	m.setups++
	st := *ev.Settings
	st.Device = ""
	b, err := json.Marshal(&st)
	if err != nil { // cannot happen for these types; keep the event as it is
		p.pushLocked(ev)
		return
	}
	key := string(b)
	switch {
	case k >= len(p.setups):
		p.setups = append(p.setups, key)
	case p.setups[k] == key:
		return
	default:
		st.Device = m.id
	}
	ev.Settings = &st
	p.pushLocked(ev)
}

// finish records the pool's end once every device's runner has ended.
func (p *Pool) finish(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := &End{Counts: p.counts}
	switch {
	case ctx.Err() != nil:
		e.Reason = "cancelled"
	case p.doneLocked():
		e.Reason = "completed"
	default:
		e.Reason = "error"
		var errs []string
		for _, m := range p.members {
			if m.end == nil {
				errs = append(errs, m.id+": ended without an end event")
				continue
			}
			if m.end.Reason == "device-lost" {
				e.Reason = "device-lost"
			}
			errs = append(errs, fmt.Sprintf("%s: %s %s", m.id, m.end.Reason, m.end.Error))
		}
		e.Error = "every device left the pool before the plan was met: " + strings.Join(errs, "; ")
	}
	if p.auto != nil {
		e.Stop = p.auto.why(e.Reason)
	}
	p.pushLocked(Event{Type: EventEnd, End: e})
	p.finished = true
	p.cond.Broadcast()
}

// wantedBenches is the benchmarks of a suite the pool's stop rule still
// wants (nil: all).
func (p *Pool) wantedBenches() map[string]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.auto.wantedBenches()
}

// releaseLostLocked ends the runners of devices still away once the pool
// is done: they would otherwise wait for their device to come back.
func (p *Pool) releaseLostLocked() {
	for _, m := range p.members {
		if m.lost && m.cancel != nil {
			m.cancel()
		}
	}
}

// doneLocked reports whether the plan is met or the sequential rule has
// decided.
func (p *Pool) doneLocked() bool {
	return p.pairs >= p.exp.TrialCap() || p.auto.decided()
}

// nextRoundFor is member m's RoundSource: it closes m's previous round and
// waits until m may run another (a warm-up round of its own, or a counted
// round the plan still needs beyond those in flight).
func (p *Pool) nextRoundFor(ctx context.Context, m *poolMember) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishRoundLocked(m)
	m.waiting = true
	defer func() { m.waiting = false }()
	p.cond.Broadcast() // a virtual pool may now hand the round to another device
	for {
		if ctx.Err() != nil || p.doneLocked() {
			p.releaseLostLocked()
			p.cond.Broadcast()
			return 0, false
		}
		warm := m.granted < p.exp.Warmup
		if !p.paused && (warm || p.pairs+p.inflight < p.exp.TrialCap()) && (!p.virtual || p.nextVirtualLocked() == m) {
			r := p.nextRound
			p.nextRound++
			m.granted++
			m.cur, m.curWarm, m.released, m.results = r, warm, false, nil
			if !warm {
				p.inflight++
			}
			return r, true
		}
		p.cond.Wait()
	}
}

// nextVirtualLocked is the member a virtual pool hands the next round to:
// nil while any device still runs a round (or sets up, or has trial
// results not yet relayed), else the waiting device whose virtual clock
// is earliest, the first given on a tie. Devices that have ended or are
// away (lost) do not hold the schedule.
func (p *Pool) nextVirtualLocked() *poolMember {
	var best *poolMember
	var bestT time.Duration
	for _, o := range p.members {
		if o.relaying > 0 {
			return nil
		}
		if o.end != nil || o.lost && !o.waiting {
			continue
		}
		if !o.waiting {
			return nil
		}
		if t := o.clock(); best == nil || t < bestT {
			best, bestT = o, t
		}
	}
	return best
}

// finishRoundLocked closes m's round in progress: it is no longer in
// flight, it counts toward the plan when it holds one counted trial per
// arm (of every build, with more than two), and it goes to the
// sequential rule.
func (p *Pool) finishRoundLocked(m *poolMember) {
	if m.cur < 0 {
		return
	}
	if !m.curWarm {
		if !m.released {
			p.inflight--
		}
		ok := map[string]int{}
		for _, r := range m.results {
			if r.status == StatusOK {
				ok[r.arm]++
			}
		}
		keys := p.exp.ArmKeys()
		complete := len(m.results) == len(keys)
		for _, k := range keys {
			complete = complete && ok[k] == 1
		}
		if complete { // one counted trial of every build
			p.pairs++
		}
		for _, r := range m.results {
			p.auto.add(&Trial{Round: m.cur, Arm: r.arm, Status: r.status, Metrics: r.metrics})
		}
	}
	m.cur, m.results, m.released = -1, nil, false
	p.cond.Broadcast()
}

// trialDone notes one trial result of m's round; a lost device releases
// its round so that another device redoes it.
func (p *Pool) trialDone(ctx context.Context, m *poolMember, req TrialRequest, res TrialResult) {
	p.mu.Lock()
	defer p.mu.Unlock()
	status := res.Status
	switch {
	case ctx.Err() != nil:
		status = StatusInterrupted // the run ended during the trial
	case status == "":
		status = StatusFailed
	}
	m.relaying++
	if m.cur == req.Round {
		m.results = append(m.results, poolResult{arm: req.Arm, status: status, metrics: res.Metrics})
	}
	if res.Lost && ctx.Err() == nil {
		m.lost = true
		if m.cur >= 0 && !m.curWarm && !m.released {
			m.released = true
			p.inflight--
		}
		p.pushLocked(Event{Type: EventDevice, Device: &DeviceState{Device: m.id, State: DeviceOffline, Reason: res.Reason}})
		p.pushLocked(Event{Type: EventNote, Note: &Note{Text: fmt.Sprintf("%s offline: it leaves the pool, its round %d is redone on another device (%s)", m.id, req.Round, res.Reason)}})
		if p.doneLocked() {
			p.releaseLostLocked()
		}
		p.cond.Broadcast()
	}
}

func (p *Pool) rejoined(m *poolMember) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m.lost {
		m.lost = false
		p.pushLocked(Event{Type: EventDevice, Device: &DeviceState{Device: m.id, State: DeviceBack}})
		p.pushLocked(Event{Type: EventNote, Note: &Note{Text: m.id + " is back: it rejoins the pool"}})
	}
}

// poolDevice wraps a pool member's device to see its trial results (and
// its reconnection) as the runner gets them.
func poolDevice(p *Pool, m *poolMember, d Device) Device {
	w := &pooledDevice{Device: d, p: p, m: m}
	if rc, ok := d.(Reconnector); ok {
		return pooledReconnector{w, rc}
	}
	return w
}

type pooledDevice struct {
	Device
	p *Pool
	m *poolMember
}

func (w *pooledDevice) RunTrial(ctx context.Context, req TrialRequest) TrialResult {
	res := w.Device.RunTrial(ctx, req)
	w.p.trialDone(ctx, w.m, req, res)
	return res
}

type pooledReconnector struct {
	*pooledDevice
	rc Reconnector
}

func (w pooledReconnector) Reconnect(ctx context.Context) error {
	err := w.rc.Reconnect(ctx)
	if err == nil {
		w.p.rejoined(w.m)
	}
	return err
}

// emit moves queued events to out, in order, and closes out after the end.
func (p *Pool) emit(out chan<- Event) {
	defer close(out)
	for {
		p.mu.Lock()
		for len(p.queue) == 0 && !p.finished {
			p.cond.Wait()
		}
		batch := p.queue
		p.queue = nil
		done := p.finished
		p.mu.Unlock()
		for _, e := range batch {
			out <- e
		}
		if done && len(batch) == 0 {
			return
		}
	}
}

// pushLocked stamps an event with the pool's clock and queues it. Callers
// hold p.mu.
func (p *Pool) pushLocked(e Event) {
	e.T = p.now().Sub(p.start).Seconds()
	if p.rec != nil {
		p.rec(e)
	}
	p.queue = append(p.queue, e)
	p.cond.Broadcast()
}

func (p *Pool) push(e Event) {
	p.mu.Lock()
	p.pushLocked(e)
	p.mu.Unlock()
}

// SetOrder changes the order mode from the next round handed out; fixed
// is refused.
func (p *Pool) SetOrder(mode string) error {
	if mode == OrderFixed {
		return errors.New(`order "fixed" cannot run on a pool: each device runs whole rounds of one A and one B`)
	}
	if !ValidOrder(mode) {
		return fmt.Errorf("order %q: want alternate or random", mode)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return ErrFinished
	}
	if mode == p.order {
		return nil
	}
	for _, m := range p.members {
		_ = m.runner.SetOrder(mode) // a runner that has ended has left the pool
	}
	p.pushLocked(Event{Type: EventToggle, Toggle: &Toggle{What: "order", From: p.order, To: mode, Round: p.nextRound}})
	p.order = mode
	return nil
}

// SetControls replaces the controls from the next round handed out.
func (p *Pool) SetControls(c Controls) error {
	if err := c.Validate(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return ErrFinished
	}
	changes := DiffControls(p.controls, c)
	if len(changes) == 0 {
		return nil
	}
	for _, m := range p.members {
		_ = m.runner.SetControls(c)
	}
	for _, ch := range changes {
		ch.Round = p.nextRound
		t := ch
		p.pushLocked(Event{Type: EventToggle, Toggle: &t})
	}
	p.controls = c
	p.pushLocked(Event{Type: EventSettings, Settings: &Settings{Controls: cloneControls(&c), Detail: map[string]string{"from_round": strconv.Itoa(p.nextRound)}}})
	return nil
}

// Pause hands out no more rounds; the rounds in progress finish.
func (p *Pool) Pause() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return ErrFinished
	}
	if p.paused {
		return nil
	}
	p.paused = true
	p.pushLocked(Event{Type: EventToggle, Toggle: &Toggle{What: "pause", From: "running", To: "paused", Round: p.nextRound}})
	return nil
}

// Resume continues a paused pool.
func (p *Pool) Resume() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return ErrFinished
	}
	if !p.paused {
		return nil
	}
	p.paused = false
	p.pushLocked(Event{Type: EventToggle, Toggle: &Toggle{What: "resume", From: "paused", To: "running", Round: p.nextRound}})
	p.cond.Broadcast()
	return nil
}

// AddNote records a free-text note.
func (p *Pool) AddNote(text string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return ErrFinished
	}
	p.pushLocked(Event{Type: EventNote, Note: &Note{Text: text}})
	return nil
}

// DeviceSet is several open devices handed around as one lab.Device, for
// code that opens "a device" per run (a study's opener): engine.RunOn
// runs a set as a Pool. Its own Setup and RunTrial refuse; Close closes
// every member.
type DeviceSet struct {
	Members []Device
}

// Info describes the set: the first member's description under an ID
// that lists every member.
func (s *DeviceSet) Info() DeviceInfo {
	if len(s.Members) == 0 {
		return DeviceInfo{ID: "pool()", Backend: "pool"}
	}
	info := s.Members[0].Info()
	ids := make([]string, len(s.Members))
	for i, m := range s.Members {
		ids[i] = m.Info().ID
	}
	info.ID = "pool(" + strings.Join(ids, ",") + ")"
	return info
}

var errDeviceSet = errors.New("a device set runs as a pool (lab.NewPool), not as one device")

// Setup refuses: a set runs as a Pool.
func (s *DeviceSet) Setup(ctx context.Context, exp *Experiment) ([]Event, error) {
	return nil, errDeviceSet
}

// RunTrial refuses: a set runs as a Pool.
func (s *DeviceSet) RunTrial(ctx context.Context, req TrialRequest) TrialResult {
	return TrialResult{Status: StatusFailed, Reason: errDeviceSet.Error()}
}

// Close closes every member.
func (s *DeviceSet) Close() error {
	var errs []error
	for _, m := range s.Members {
		if err := m.Close(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.Info().ID, err))
		}
	}
	return errors.Join(errs...)
}
