package tui

import (
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/perflab/perflab/lab"
)

// replayFrame is how often a playing replay advances.
const replayFrame = 50 * time.Millisecond

// maxPerFrame bounds the events a "max" speed replay applies per frame, so
// the dashboard visibly fills instead of jumping.
const maxPerFrame = 400

// replaySpeeds are the speeds the s key cycles through; 0 means as fast as
// possible.
var replaySpeeds = []float64{1, 10, 0}

// replayer feeds a saved session's events to the dashboard at the original
// pace times a speed, or as fast as possible. It never runs anything.
type replayer struct {
	events  []lab.Event
	pos     int     // events applied
	clock   float64 // session time reached, seconds
	playing bool
	speed   float64
	gen     int // invalidates ticks of an earlier play
	last    time.Time
}

func newReplayer(events []lab.Event, speed float64) *replayer {
	return &replayer{events: events, speed: speed}
}

func (r *replayer) done() bool { return r.pos >= len(r.events) }

// play starts playing and returns the first tick.
func (r *replayer) play() tea.Cmd {
	if r.done() {
		return nil
	}
	r.playing = true
	r.gen++
	r.last = time.Time{}
	return r.nextTick()
}

func (r *replayer) nextTick() tea.Cmd {
	gen := r.gen
	return tea.Tick(replayFrame, func(t time.Time) tea.Msg { return replayTickedMsg{gen: gen, at: t} })
}

// tick advances the clock by the elapsed time × speed and returns the events
// now due, and the next tick while playing.
func (r *replayer) tick(msg replayTickedMsg) ([]lab.Event, tea.Cmd) {
	if !r.playing || msg.gen != r.gen {
		return nil, nil
	}
	dt := replayFrame.Seconds()
	if !r.last.IsZero() && msg.at.After(r.last) {
		dt = msg.at.Sub(r.last).Seconds()
	}
	r.last = msg.at
	var evs []lab.Event
	if r.speed == 0 {
		evs = r.take(maxPerFrame)
	} else {
		r.clock += dt * r.speed
		// Skip dead time: the next event is never more than two seconds of
		// session time away, so a long idle gap does not stall the replay.
		if r.pos < len(r.events) && r.events[r.pos].T > r.clock+2 {
			r.clock = r.events[r.pos].T
		}
		start := r.pos
		for r.pos < len(r.events) && r.events[r.pos].T <= r.clock && r.pos-start < 50*maxPerFrame {
			r.pos++
		}
		evs = r.events[start:r.pos]
	}
	if r.done() {
		r.playing = false
		return evs, nil
	}
	return evs, r.nextTick()
}

// take applies up to n events and moves the clock to the last one.
func (r *replayer) take(n int) []lab.Event {
	end := min(len(r.events), r.pos+n)
	evs := r.events[r.pos:end]
	r.pos = end
	if len(evs) > 0 {
		r.clock = evs[len(evs)-1].T
	}
	return evs
}

// key handles the replay keys. Events a step or a jump releases are
// returned for the dashboard to apply at once, in the same Update, so the
// position shown never runs ahead of the panels.
func (r *replayer) key(msg tea.KeyPressMsg, k dashKeys) ([]lab.Event, tea.Cmd) {
	switch {
	case key.Matches(msg, k.Play):
		if r.playing {
			r.playing = false
			r.gen++
			return nil, nil
		}
		return nil, r.play()
	case key.Matches(msg, k.Step):
		r.playing = false
		r.gen++
		return r.take(1), nil
	case key.Matches(msg, k.End):
		r.playing = false
		r.gen++
		return r.take(len(r.events)), nil
	case key.Matches(msg, k.Speed):
		switch msg.String() {
		case "1":
			r.speed = 1
		case "2":
			r.speed = 10
		case "3":
			r.speed = 0
		default:
			for i, s := range replaySpeeds {
				if s == r.speed {
					r.speed = replaySpeeds[(i+1)%len(replaySpeeds)]
					break
				}
			}
		}
	}
	return nil, nil
}

func speedLabel(s float64) string {
	switch s {
	case 0:
		return "max"
	case 1:
		return "×1"
	default:
		return "×" + trimFloat(s)
	}
}
