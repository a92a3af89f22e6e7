package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/perflab/perflab/lab"
)

// replayFrame is how often a playing replay advances.
const replayFrame = 50 * time.Millisecond

// maxGap is the longest gap between two events (seconds of session time)
// a replay at ×1 or ×10 plays out; a longer one is skipped to its last
// second.
const maxGap = 30.0

// maxPerFrame bounds the events a "max" speed replay applies per frame, so
// the dashboard visibly fills instead of jumping.
const maxPerFrame = 400

// replaySpeeds are the speeds the s key cycles through; 0 means as fast as
// possible.
var replaySpeeds = []float64{1, 10, 0}

// replayer feeds a saved session's events to the dashboard at the original
// pace times a speed, or as fast as possible. It never runs anything.
type replayer struct {
	stream  int // the replay's ticks are routed by it
	events  []lab.Event
	pos     int     // events applied
	clock   float64 // session time reached, seconds
	playing bool
	speed   float64
	gen     int // invalidates ticks of an earlier play
	last    time.Time
}

func newReplayer(events []lab.Event, speed float64, stream int) *replayer {
	return &replayer{events: events, speed: speed, stream: stream}
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
	gen, stream := r.gen, r.stream
	return tea.Tick(replayFrame, func(t time.Time) tea.Msg { return replayTickedMsg{stream: stream, gen: gen, at: t} })
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
		// Skip dead time: a gap of more than maxGap seconds of session
		// time (a pause, a wait for a device) plays as one second, so it
		// does not stall the replay; shorter gaps, the spacing of trials
		// and probe samples, play at the chosen speed.
		if r.pos < len(r.events) && r.events[r.pos].T > r.clock+maxGap {
			r.clock = r.events[r.pos].T - 1
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
func (r *replayer) key(msg tea.KeyPressMsg, k replayKeys) ([]lab.Event, tea.Cmd) {
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

// replayDash is the dashboard of a saved session: the shared panels fed
// by a replayer, and the keys that move through it.
type replayDash struct {
	feed
	rp            *replayer
	keys          replayKeys
	status        string
	err           error
	width, height int
}

// replayKeys move through a replay.
type replayKeys struct {
	Play  key.Binding
	Step  key.Binding
	Speed key.Binding
	End   key.Binding
}

func newReplayKeys() replayKeys {
	return replayKeys{
		Play:  key.NewBinding(key.WithKeys("space", "p"), key.WithHelp("space", "play/pause")),
		Step:  key.NewBinding(key.WithKeys(".", "right"), key.WithHelp("→/.", "step")),
		Speed: key.NewBinding(key.WithKeys("s", "1", "2", "3"), key.WithHelp("s/1/2/3", "speed ×1/×10/max")),
		End:   key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G", "jump to end")),
	}
}

// ShortHelp lists the replay keys.
func (k replayKeys) ShortHelp() []key.Binding { return []key.Binding{k.Play, k.Step, k.Speed, k.End} }

// FullHelp groups the replay keys.
func (k replayKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Play, k.Step, k.Speed, k.End}}
}

// newReplayDash replays events at speed; problems lists lines of the file
// that could not be read.
func newReplayDash(st *Styles, dev lab.DeviceInfo, plan lab.Experiment, an analyzer, events []lab.Event, speed float64, problems []string, stream int) *replayDash {
	d := &replayDash{feed: newFeed(st, dev, plan, an, stream), rp: newReplayer(events, speed, stream), keys: newReplayKeys()}
	if len(problems) > 0 {
		d.err = fmt.Errorf("%d unreadable lines skipped: %s", len(problems), strings.Join(problems, "; "))
	}
	d.status = fmt.Sprintf("%d events", len(events))
	return d
}

// Init starts playing.
func (d *replayDash) Init() tea.Cmd { return d.rp.play() }

// Typing: a replay has no prompt.
func (d *replayDash) Typing() bool { return false }

// CanLeave: a replay stays until the program quits.
func (d *replayDash) CanLeave() bool { return false }

// AskQuit quits: a replay runs nothing.
func (d *replayDash) AskQuit() tea.Cmd { return tea.Quit }

// Interrupt quits.
func (d *replayDash) Interrupt() tea.Cmd { return tea.Quit }

func (d *replayDash) applyEvents(evs []lab.Event) tea.Cmd {
	d.apply(evs)
	return tea.Batch(d.maybeAnalyze(d.rp.done()), d.whereRefresh())
}

// Update advances the replay and takes its analyses.
func (d *replayDash) Update(msg tea.Msg) (*replayDash, tea.Cmd) {
	switch msg := msg.(type) {
	case reportComputedMsg:
		d.reported(msg)
		return d, d.maybeAnalyze(d.rp.done())
	case whereComputedMsg:
		return d, d.whereComputed(msg)
	case replayTickedMsg:
		evs, cmd := d.rp.tick(msg)
		return d, tea.Batch(d.applyEvents(evs), cmd)
	case tea.KeyPressMsg:
		if ok, cmd := d.viewKey(msg); ok {
			return d, cmd
		}
		evs, cmd := d.rp.key(msg, d.keys)
		return d, tea.Batch(d.applyEvents(evs), cmd)
	}
	return d, nil
}

// ShortHelp lists the replay keys, an open view's first.
func (d *replayDash) ShortHelp() []key.Binding {
	if d.notes.open || d.where.open {
		// The open view's keys first: they are what the screen shows.
		return append(d.viewHelp(true), d.keys.ShortHelp()...)
	}
	return append(d.keys.ShortHelp(), d.viewHelp(true)...)
}

// FullHelp groups them.
func (d *replayDash) FullHelp() [][]key.Binding {
	return append(d.keys.FullHelp(), d.viewHelp(false))
}

// SetSize sets the dashboard's area.
func (d *replayDash) SetSize(w, h int) { d.width, d.height = w, h }

// Stream is the id of the replay's ticks and analyses.
func (d *replayDash) Stream() int { return d.stream }

func (d *replayDash) stateWord() string {
	switch {
	case d.rp.done():
		return "replay · at end"
	case d.rp.playing:
		return "replay · playing " + speedLabel(d.rp.speed)
	}
	return "replay · paused " + speedLabel(d.rp.speed)
}

// View draws the dashboard into exactly width × height cells; the root
// draws the status line below.
func (d *replayDash) View() string {
	w, h := d.width, d.height
	if w <= 0 || h <= 0 {
		return ""
	}
	top := []string{d.headLine(d.stateWord(), true, w), d.progress(w, false, fmt.Sprintf(" · event %d/%d", d.rp.pos, len(d.rp.events)))}
	bodyH := h - len(top)
	body, ok := d.viewBody(w, bodyH)
	if !ok {
		body = d.body(w, bodyH)
	}
	return strings.Join(top, "\n") + "\n" + block(body, w, bodyH)
}

// StatusLine is the error (unreadable lines) or the event count.
func (d *replayDash) StatusLine() string {
	if d.err != nil {
		return d.st.Error.Render(d.err.Error())
	}
	return d.st.Muted.Render(d.status)
}
