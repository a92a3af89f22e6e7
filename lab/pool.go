package lab

import (
	"context"
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
	// seqs numbers the counted rounds handed out (seqOf), nextSeq the next.
	seqs    map[int]int
	nextSeq int
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
	p.auto = newAutoStop(&p.exp, len(devs))
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
		m.runner.setRoundSeq(p.seqOf)
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
