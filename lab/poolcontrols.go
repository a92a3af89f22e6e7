package lab

import (
	"errors"
	"fmt"
	"strconv"
)

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
