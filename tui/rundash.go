package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
)

// runDash is the dashboard of a run in progress: the shared panels, and
// the keys that steer the run (order, pause, controls, note, abort).
type runDash struct {
	feed
	liveStream
	keys runKeys

	noting    bool
	note      textinput.Model
	editing   bool
	ctrl      controlsPane
	profiles  []string // governor profiles offered when editing controls
	prevOrder string
	// toggle is a change of the order or the controls waiting for its
	// y/N: it would start a new regime (confirmToggle).
	toggle *pendingToggle

	width, height int
}

// runKeys steer a running run.
type runKeys struct {
	Order    key.Binding
	Controls key.Binding
	Pause    key.Binding
	Note     key.Binding
	Abort    key.Binding
}

func newRunKeys() runKeys {
	return runKeys{
		Order:    key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "randomize on/off")),
		Controls: key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "controls")),
		Pause:    key.NewBinding(key.WithKeys("p", "space"), key.WithHelp("p", "pause/resume")),
		Note:     key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "note")),
		Abort:    key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "abort")),
	}
}

// ShortHelp lists the run keys.
func (k runKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Order, k.Pause, k.Controls, k.Note, k.Abort}
}

// FullHelp groups the run keys.
func (k runKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Order, k.Controls, k.Pause}, {k.Note, k.Abort}}
}

// pendingToggle is an order or controls change asked for, not yet sent.
type pendingToggle struct {
	what     string // "order alternate", "controls"
	regime   int    // the regime it starts
	order    string // the order to set, or
	controls *lab.Controls
}

// toggleCost is the regime a change of the order or the controls would
// start, or 0 when it costs nothing: a toggle before the current regime
// has a counted trial joins it (sessions.Regimes).
func (d *runDash) toggleCost() int {
	rs := sessions.Regimes(d.state.eventsSoFar())
	if rs[len(rs)-1].Counted == [2]int{} {
		return 0
	}
	return len(rs) + 1
}

// confirmToggle sends t at once when it costs nothing, else asks y/N
// first (issue 29: a toggle set the verdict so far aside unannounced).
func (d *runDash) confirmToggle(t pendingToggle) {
	if t.regime = d.toggleCost(); t.regime == 0 {
		d.applyToggle(t)
		return
	}
	d.toggle = &t
}

// applyToggle sends the change to the runner.
func (d *runDash) applyToggle(t pendingToggle) {
	var err error
	if t.controls != nil {
		err = d.run.runner.SetControls(*t.controls)
	} else {
		err = d.run.runner.SetOrder(t.order)
	}
	if err != nil {
		d.err = err
		return
	}
	d.status = t.what + " from the next round"
	if t.regime > 0 {
		d.status += fmt.Sprintf(": regime %d", t.regime)
	}
}

// newRunDash watches a run about to start (runStartedMsg follows).
func newRunDash(st *Styles, dev lab.DeviceInfo, plan lab.Experiment, an analyzer, profiles []string, stream int) *runDash {
	d := &runDash{feed: newFeed(st, dev, plan, an, stream), keys: newRunKeys(), profiles: profiles}
	d.starting = true
	d.note = newTextInput()
	d.note.Prompt = "note> "
	d.note.Placeholder = "what changed? (enter to record, esc to cancel)"
	d.prevOrder = lab.OrderAlternate
	return d
}

// running reports whether the run is still producing events. Once the end
// event is in, the session is complete: quitting needs no confirmation
// (runProgram still waits for the file to close).
func (d *runDash) running() bool { return d.live(d.state.end != nil) }

// steerable reports whether live actions still reach a running run.
func (d *runDash) steerable() bool {
	return d.run != nil && !d.finished && d.state.end == nil
}

// Typing reports whether the dashboard wants raw keys (note, controls, y/N).
func (d *runDash) Typing() bool { return d.noting || d.editing || d.confirmAbort || d.toggle != nil }

// CanLeave: a run's dashboard stays until the program quits.
func (d *runDash) CanLeave() bool { return false }

func (d *runDash) ended() bool { return d.finished || d.state.end != nil }

func (d *runDash) applyEvents(evs []lab.Event) tea.Cmd {
	d.apply(evs)
	for _, ev := range evs {
		// A resume, from this pane or elsewhere, ends the pause notice.
		if ev.Type == lab.EventToggle && ev.Toggle != nil && ev.Toggle.What == "resume" {
			d.status = d.sessionStatus()
		}
	}
	// The where view follows the trials as the other panels do.
	return tea.Batch(d.maybeAnalyze(d.ended()), d.whereRefresh())
}

// Update handles the run's stream, its analyses and the steering keys.
func (d *runDash) Update(msg tea.Msg) (*runDash, tea.Cmd) {
	switch msg := msg.(type) {
	case runStartedMsg:
		cmd := d.started(msg)
		d.where.path = d.SessionPath()
		return d, cmd
	case eventsArrivedMsg:
		return d, d.arrived(msg, d.applyEvents, func() tea.Cmd { return tea.Batch(d.maybeAnalyze(d.ended()), d.whereRefresh()) })
	case whereComputedMsg:
		return d, d.whereComputed(msg)
	case reportComputedMsg:
		d.reported(msg)
		return d, d.maybeAnalyze(d.ended())
	case controlsDoneMsg:
		if d.editing {
			d.editing = false
			c := d.ctrl.experiment(lab.Experiment{}).Controls
			switch {
			case len(lab.DiffControls(d.state.controls, c)) == 0:
				d.status = "controls unchanged"
			case d.steerable():
				d.confirmToggle(pendingToggle{what: "controls change", controls: &c})
			}
		}
		return d, nil
	case tea.KeyPressMsg:
		return d, d.updateKey(msg)
	}
	if d.noting {
		var cmd tea.Cmd
		d.note, cmd = d.note.Update(msg)
		return d, cmd
	}
	return d, nil
}

func (d *runDash) updateKey(msg tea.KeyPressMsg) tea.Cmd {
	switch {
	case d.confirmAbort:
		d.confirmAbort = false
		if msg.String() == "y" || msg.String() == "Y" {
			// Also after q or ctrl+c: the end screen shows what the
			// finished trials say and where they are saved; q then quits
			// (a second ctrl+c instead of y quits at once).
			d.abort(false)
		} else {
			d.status = "not aborted"
		}
		return nil
	case d.toggle != nil:
		t := *d.toggle
		d.toggle = nil
		switch {
		case msg.String() != "y" && msg.String() != "Y":
			d.status = "not changed: " + t.what
		case d.steerable():
			d.applyToggle(t)
		default:
			d.status = "not changed: the run has ended"
		}
		return nil
	case d.noting:
		switch msg.String() {
		case "esc":
			d.noting = false
			d.note.Blur()
			return nil
		case "enter":
			d.noting = false
			d.note.Blur()
			text := strings.TrimSpace(d.note.Value())
			if text != "" && d.run != nil {
				if err := d.run.runner.AddNote(text); err != nil {
					d.err = err
				}
			}
			return nil
		}
		var cmd tea.Cmd
		d.note, cmd = d.note.Update(msg)
		return cmd
	case d.editing:
		if msg.String() == "esc" {
			d.editing = false
			return nil
		}
		var cmd tea.Cmd
		d.ctrl, cmd = d.ctrl.Update(msg)
		return cmd
	}
	if ok, cmd := d.viewKey(msg); ok {
		return cmd
	}
	live := d.steerable()
	switch {
	case key.Matches(msg, d.keys.Abort) && d.running():
		d.confirmAbort, d.abortThenQ = true, false
	case !live:
		return nil
	case key.Matches(msg, d.keys.Order):
		cur := d.state.order
		next := lab.OrderRandom
		if cur == lab.OrderRandom {
			next = d.prevOrder
		} else {
			d.prevOrder = cur
		}
		d.confirmToggle(pendingToggle{what: "order " + next, order: next})
	case key.Matches(msg, d.keys.Pause):
		var err error
		if d.state.paused {
			err = d.run.runner.Resume()
			d.status = d.sessionStatus()
		} else {
			err = d.run.runner.Pause()
			d.status = "pausing after the round in progress"
		}
		if err != nil {
			d.err = err
		}
	case key.Matches(msg, d.keys.Note):
		d.noting = true
		d.note.Reset()
		return d.note.Focus()
	case key.Matches(msg, d.keys.Controls):
		d.ctrl = newControlsPane(d.st, d.state.device, lab.Experiment{Controls: d.state.controls}, d.profiles, true)
		d.ctrl.SetSize(d.width, d.height-3)
		d.editing = true
	}
	return nil
}

// abort cancels the run; the runner then records an end event and the
// relay closes the session file.
func (d *runDash) abort(thenQuit bool) { d.liveStream.abort(thenQuit, runAbortStatus) }

// runAbortStatus is the status line while an aborted run closes its file.
const runAbortStatus = "aborting: finishing the session file…"

// AskQuit handles q: a running run asks y/N first.
func (d *runDash) AskQuit() tea.Cmd { return d.askQuit(d.running()) }

// Interrupt handles ctrl+c: the first asks like q, a second aborts and
// quits once the session is closed.
func (d *runDash) Interrupt() tea.Cmd { return d.interrupt(d.running(), runAbortStatus) }

// ShortHelp lists the keys that do something now.
func (d *runDash) ShortHelp() []key.Binding { return d.keyMap().short }

// FullHelp groups them.
func (d *runDash) FullHelp() [][]key.Binding { return d.keyMap().full }

func (d *runDash) keyMap() keyHelp {
	if d.editing {
		h := keyHelp{short: d.ctrl.ShortHelp(), full: d.ctrl.FullHelp()}
		h.short = append(h.short, key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")))
		return h
	}
	if d.confirmAbort {
		return confirmKeys()
	}
	if d.toggle != nil {
		ok := key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "change"))
		no := key.NewBinding(key.WithKeys("n"), key.WithHelp("n/any key", "keep as is"))
		return keyHelp{short: []key.Binding{ok, no}, full: [][]key.Binding{{ok, no}}}
	}
	if d.noting {
		ok := key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "record note"))
		no := key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel"))
		return keyHelp{short: []key.Binding{ok, no}, full: [][]key.Binding{{ok, no}}}
	}
	k := d.keys
	if !d.steerable() {
		// The run has ended (or not started): nothing left to steer.
		for _, b := range []*key.Binding{&k.Order, &k.Pause, &k.Controls, &k.Note} {
			b.SetEnabled(false)
		}
	}
	if !d.running() {
		k.Abort.SetEnabled(false)
	}
	h := keyHelp{short: k.ShortHelp(), full: k.FullHelp()}
	switch {
	case d.notes.open || d.where.open:
		h.short = append(d.viewHelp(true), h.short...)
	case !d.steerable():
		h.short = append(h.short, d.viewHelp(false)...) // the end screen has room
	default:
		h.short = append(h.short, d.viewHelp(true)...)
	}
	h.full = append(h.full, d.viewHelp(false))
	return h
}

// SetSize sets the dashboard's area.
func (d *runDash) SetSize(w, h int) {
	d.width, d.height = w, h
	d.note.SetWidth(max(10, w-10))
	if d.editing {
		d.ctrl.SetSize(w, h-3)
	}
}

// Stream is the id of the run's stream.
func (d *runDash) Stream() int { return d.stream }

// Regressed reports whether the run completed and its final analysis found
// a regression in some metric.
func (d *runDash) Regressed() bool {
	if !d.finalDone || d.state.end == nil || d.state.end.Reason != "completed" {
		return false
	}
	for _, mp := range d.panel.metrics {
		if mp.verdict == "regression" {
			return true
		}
	}
	return false
}

// SessionPath is the session file the run writes ("" before it starts).
func (d *runDash) SessionPath() string {
	if d.run == nil {
		return ""
	}
	return d.run.sessionPath
}

// WaitSaved cancels the run if still going and waits, up to timeout, until
// its session file is closed with its end event.
func (d *runDash) WaitSaved(timeout time.Duration) error {
	if d.run == nil || d.run.saved == nil {
		return nil
	}
	d.run.cancel()
	select {
	case <-d.run.saved:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("session %s: not closed after %s; it holds every finished trial", d.run.sessionPath, timeout)
	}
}

// stateWord says what the run is doing.
func (d *runDash) stateWord() string {
	s := d.state
	switch {
	case d.starting:
		return "starting"
	case s.end != nil:
		return "ended: " + s.end.Reason
	case d.finished:
		return "stopped"
	case d.quitting:
		return "aborting"
	case s.paused:
		return "paused"
	case len(s.Trials()) == 0 && d.chart.Samples() > 0:
		return "stability check"
	default:
		return "running"
	}
}

// View draws the dashboard into exactly width × height cells; the root
// draws the status line below.
func (d *runDash) View() string {
	w, h := d.width, d.height
	if w <= 0 || h <= 0 {
		return ""
	}
	st := d.st
	top := []string{d.headLine(d.stateWord(), true, w), d.progress(w, d.state.end == nil, "")}
	bodyH := h - len(top)
	var body string
	if d.editing {
		body = st.PanelTitle.Render("controls from the next round (enter applies, esc cancels)") + "\n" + d.ctrl.View()
	} else if v, ok := d.viewBody(w, bodyH); ok {
		body = v
	} else {
		body = d.body(w, bodyH)
	}
	return strings.Join(top, "\n") + "\n" + block(body, w, bodyH)
}

// StatusLine is the y/N question, the note prompt, the error or the status.
func (d *runDash) StatusLine() string {
	st := d.st
	switch {
	case d.confirmAbort:
		return st.Warning.Render("abort the run? the session keeps every finished trial (y/N)")
	case d.toggle != nil:
		t := d.toggle
		return st.Warning.Render(fmt.Sprintf("%s starts regime %d: the verdict will use its rounds only (y/N)", t.what, t.regime))
	case d.noting:
		return d.note.View()
	case d.err != nil:
		return st.Error.Render(d.err.Error())
	}
	return st.Muted.Render(d.status)
}
