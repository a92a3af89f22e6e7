package lab

import (
	"context"
	"fmt"
	"time"
)

// How a pool hands rounds to its devices: each device asks for its next
// round (nextRoundFor), a virtual pool schedules them by the devices'
// clocks, a finished round counts toward the plan and the stop rule, and a
// lost device's round is redone by another.

// seqOf is the place of counted round r among the counted rounds the
// pool handed out (warm-ups, which share the round numbers, left out):
// what a suite's round runs goes by it (BenchSpec.TrialCommand).
func (p *Pool) seqOf(r int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.seqs[r]; ok {
		return s
	}
	return r
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
				if p.seqs == nil {
					p.seqs = map[int]int{}
				}
				p.seqs[r] = p.nextSeq
				p.nextSeq++
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

// rejoined records that m's lost device is back in the pool.
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

// pooledDevice is a pool member's device as its runner sees it: each
// trial result goes to the pool too.
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

// pooledReconnector is a pooledDevice that can reconnect: a device back
// rejoins the pool.
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
