package lab

import (
	"context"
	"encoding/json"
	"fmt"
)

// How a pool relays its devices' events into one stream (one session)
// and hands it on: each device's trials, starts, settings, notes and end.

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
			if ev.Trial != nil {
				p.mu.Lock()
				p.relayTrialLocked(m, ev)
				p.mu.Unlock()
			}
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
			p.memberEndedLocked(m, ev.End)
			p.mu.Unlock()
		default:
			p.push(ev)
		}
	}
}

// relayTrialLocked relays a trial of m's device: with the device, the
// next pool-wide index, counted for the end event.
func (p *Pool) relayTrialLocked(m *poolMember, ev Event) {
	t := *ev.Trial
	t.Device = m.id
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
}

// memberEndedLocked closes the round of m, whose runner ended; a device
// that ended otherwise than completed or cancelled has left the pool, and
// a device event and a note say so.
func (p *Pool) memberEndedLocked(m *poolMember, end *End) {
	m.end = end
	p.finishRoundLocked(m)
	if end != nil && end.Reason != "completed" && end.Reason != "cancelled" {
		why := end.Reason
		if end.Error != "" {
			why += ": " + end.Error
		}
		p.pushLocked(Event{Type: EventDevice, Device: &DeviceState{Device: m.id, State: DeviceLeft, Reason: why}})
		p.pushLocked(Event{Type: EventNote, Note: &Note{Text: fmt.Sprintf("%s left the pool (%s); the other devices go on", m.id, why)}})
	}
	p.cond.Broadcast()
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
