package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/perflab/perflab/lab"
)

// dashMode says what feeds the dashboard.
type dashMode int

const (
	modeLive   dashMode = iota // a run in progress
	modeReplay                 // a saved session
	modeCheck                  // a stability check only
)

// dashboard is the live view of a run, a replay, or a stability check: one
// state fed by events, panels drawn from a cached analysis.
type dashboard struct {
	st    *Styles
	mode  dashMode
	state *runState
	keys  dashKeys

	// analysis cache
	panel      panelData
	computing  bool
	panelVer   int
	finalDone  bool
	stability  string // one-line summary of the probe so far
	stabLines  []string
	analyzeFor func(in []metricInput) panelData
	stabFor    func([]lab.ProbeSample) (string, []string)
	ciScale    float64 // the CI axis' half-width (%), see nextCIScale

	// live
	run          *liveRun
	starting     bool
	finished     bool
	quitting     bool
	confirmAbort bool
	abortThenQ   bool
	noting       bool
	note         textinput.Model
	editing      bool
	ctrl         controlsPane
	prevOrder    string
	status       string
	err          error

	// replay
	rp *replayer

	width, height int
}

type dashKeys struct {
	Order    key.Binding
	Controls key.Binding
	Pause    key.Binding
	Note     key.Binding
	Abort    key.Binding
	// replay
	Play  key.Binding
	Step  key.Binding
	Speed key.Binding
	End   key.Binding
}

func newDashKeys(mode dashMode) dashKeys {
	k := dashKeys{
		Order:    key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "randomize on/off")),
		Controls: key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "controls")),
		Pause:    key.NewBinding(key.WithKeys("p", "space"), key.WithHelp("p", "pause/resume")),
		Note:     key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "note")),
		Abort:    key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "abort")),
		Play:     key.NewBinding(key.WithKeys("space", "p"), key.WithHelp("space", "play/pause")),
		Step:     key.NewBinding(key.WithKeys(".", "right"), key.WithHelp("→/.", "step")),
		Speed:    key.NewBinding(key.WithKeys("s", "1", "2", "3"), key.WithHelp("s/1/2/3", "speed ×1/×10/max")),
		End:      key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G", "jump to end")),
	}
	live := mode == modeLive
	for _, b := range []*key.Binding{&k.Order, &k.Controls, &k.Pause, &k.Note} {
		b.SetEnabled(live)
	}
	k.Abort.SetEnabled(mode != modeReplay)
	if mode == modeCheck {
		k.Abort.SetHelp("x", "stop check")
	}
	for _, b := range []*key.Binding{&k.Play, &k.Step, &k.Speed, &k.End} {
		b.SetEnabled(mode == modeReplay)
	}
	return k
}

func newDashboard(st *Styles, mode dashMode, dev lab.DeviceInfo, plan lab.Experiment) *dashboard {
	d := &dashboard{st: st, mode: mode, state: newRunState(dev, plan), keys: newDashKeys(mode)}
	d.panel = emptyPanel(plan)
	d.note = newTextInput()
	d.note.Prompt = "note> "
	d.note.Placeholder = "what changed? (enter to record, esc to cancel)"
	d.prevOrder = lab.OrderAlternate
	return d
}

// running reports whether a live run or check is still producing events.
func (d *dashboard) running() bool {
	// Once the end event is in, the session is complete: quitting needs no
	// confirmation (runProgram still waits for the file to close).
	return d.mode != modeReplay && (d.starting || (d.run != nil && !d.finished && d.state.end == nil))
}

// steerable reports whether live actions still reach a running run.
func (d *dashboard) steerable() bool {
	return d.mode == modeLive && d.run != nil && !d.finished && d.state.end == nil
}

// typing reports whether the dashboard wants raw keys (note, controls, y/N).
func (d *dashboard) typing() bool { return d.noting || d.editing || d.confirmAbort }

// applyEvents feeds events to the state and returns the commands they call
// for: a new analysis, at most one at a time.
func (d *dashboard) applyEvents(evs []lab.Event) tea.Cmd {
	probe := false
	for _, ev := range evs {
		d.state.apply(ev)
		if ev.Type == lab.EventProbe {
			probe = true
		}
		// A resume, from this pane or elsewhere, ends the pause notice.
		if ev.Type == lab.EventToggle && ev.Toggle != nil && ev.Toggle.What == "resume" && d.mode == modeLive {
			d.status = d.sessionStatus()
		}
	}
	if probe && d.stabFor != nil && len(d.state.probe) >= 2 {
		d.stability, d.stabLines = d.stabFor(d.state.probe)
	}
	return d.maybeAnalyze()
}

// maybeAnalyze starts an analysis when trials arrived since the last one
// and none is running; the final one (run ended, replay at its end) uses
// the full resample count.
func (d *dashboard) maybeAnalyze() tea.Cmd {
	if d.computing || d.analyzeFor == nil {
		return nil
	}
	final := d.ended()
	if d.state.Version() == d.panelVer && (!final || d.finalDone) {
		return nil
	}
	if d.state.Version() == 0 {
		return nil
	}
	d.computing = true
	in := d.state.inputs()
	ver := d.state.Version()
	f := d.analyzeFor
	return func() tea.Msg {
		t0 := time.Now()
		pd := f(in)
		return reportComputedMsg{version: ver, final: final, panel: pd, took: time.Since(t0)}
	}
}

// ended reports whether no more events will come.
func (d *dashboard) ended() bool {
	if d.mode == modeReplay {
		return d.rp != nil && d.rp.done()
	}
	return d.finished || d.state.end != nil
}

func (d *dashboard) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case runStartedMsg:
		d.starting = false
		if msg.err != nil {
			d.err = msg.err
			d.finished = true
			return nil
		}
		d.run = msg.run
		d.status = d.sessionStatus()
		if d.quitting {
			msg.run.cancel()
		}
		return waitForEvents(msg.run.stream, msg.run.events)
	case eventsArrivedMsg:
		if d.run == nil || msg.stream != d.run.stream {
			return nil
		}
		if msg.err != nil {
			d.err = msg.err
		}
		cmd := d.applyEvents(msg.events)
		if msg.closed {
			d.finished = true
			if d.run.sessionPath != "" {
				d.status = "saved " + d.run.sessionPath + " · q quits"
			}
			d.run.cancel()
			if d.quitting {
				return tea.Quit
			}
			return tea.Batch(cmd, d.maybeAnalyze())
		}
		return tea.Batch(cmd, waitForEvents(d.run.stream, d.run.events))
	case reportComputedMsg:
		d.computing = false
		d.ciScale = nextCIScale(d.ciScale, msg.panel.metrics)
		d.panel = msg.panel
		d.panel.ciScale = d.ciScale
		d.panel.final = msg.final && msg.version == d.state.Version()
		d.panelVer = msg.version
		if msg.final && msg.version == d.state.Version() {
			d.finalDone = true
		}
		return d.maybeAnalyze()
	case replayTickedMsg:
		if d.rp == nil {
			return nil
		}
		evs, cmd := d.rp.tick(msg)
		return tea.Batch(d.applyEvents(evs), cmd)
	case controlsDoneMsg:
		if d.editing {
			d.editing = false
			if d.run != nil {
				if err := d.run.runner.SetControls(d.ctrl.controls); err != nil {
					d.err = err
				} else {
					d.status = "controls change from the next round"
				}
			}
		}
		return nil
	case tea.KeyPressMsg:
		return d.updateKey(msg)
	}
	if d.noting {
		var cmd tea.Cmd
		d.note, cmd = d.note.Update(msg)
		return cmd
	}
	return nil
}

func (d *dashboard) updateKey(msg tea.KeyPressMsg) tea.Cmd {
	switch {
	case d.confirmAbort:
		d.confirmAbort = false
		if msg.String() == "y" || msg.String() == "Y" {
			d.abort(d.abortThenQ)
			if d.abortThenQ && !d.running() {
				return tea.Quit
			}
		} else {
			d.status = "not aborted"
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
	if d.rp != nil {
		evs, cmd := d.rp.key(msg, d.keys)
		return tea.Batch(d.applyEvents(evs), cmd)
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
		if err := d.run.runner.SetOrder(next); err != nil {
			d.err = err
		} else {
			d.status = "order " + next + " from the next round"
		}
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
		d.ctrl = newControlsPane(d.st, d.state.device, lab.Experiment{Controls: d.state.controls}, d.ctrl.profiles, true)
		d.ctrl.SetSize(d.width, d.height-4)
		d.editing = true
	}
	return nil
}

// abort cancels the run; the runner then records an end event and the
// relay closes the session file.
func (d *dashboard) abort(thenQuit bool) {
	d.quitting = thenQuit
	if d.run != nil {
		d.run.cancel()
	}
	d.status = "aborting: finishing the session file…"
	if d.mode == modeCheck {
		d.status = "stopping the check…"
	}
}

// sessionStatus is the resting status line: where the session goes.
func (d *dashboard) sessionStatus() string {
	if d.run == nil || d.run.sessionPath == "" {
		return "not recorded: a check writes no session"
	}
	return "session: " + d.run.sessionPath
}

// askQuit handles q/ctrl+c: a running run asks y/N first.
func (d *dashboard) askQuit() tea.Cmd {
	if !d.running() {
		if d.run != nil {
			d.run.cancel()
		}
		return tea.Quit
	}
	d.confirmAbort, d.abortThenQ = true, true
	return nil
}

func (d *dashboard) help() keyHelp {
	k := d.keys
	if d.editing {
		h := d.ctrl.help()
		h.short = append(h.short, key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")))
		return h
	}
	if d.noting || d.confirmAbort {
		ok := key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "record note"))
		no := key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel"))
		if d.confirmAbort {
			ok.SetHelp("y", "abort")
			no.SetHelp("n/any key", "keep running")
		}
		return keyHelp{short: []key.Binding{ok, no}, full: [][]key.Binding{{ok, no}}}
	}
	if d.mode == modeLive && !d.steerable() {
		// The run has ended (or not started): nothing left to steer.
		for _, b := range []*key.Binding{&k.Order, &k.Pause, &k.Controls, &k.Note} {
			b.SetEnabled(false)
		}
	}
	if !d.running() {
		k.Abort.SetEnabled(false)
	}
	short := []key.Binding{k.Order, k.Pause, k.Controls, k.Note, k.Abort, k.Play, k.Step, k.Speed, k.End}
	return keyHelp{short: short, full: [][]key.Binding{{k.Order, k.Controls, k.Pause}, {k.Note, k.Abort}, {k.Play, k.Step, k.Speed, k.End}}}
}

func (d *dashboard) SetSize(w, h int) {
	d.width, d.height = w, h
	d.note.SetWidth(max(10, w-10))
	if d.editing {
		d.ctrl.SetSize(w, h-4)
	}
}

// startCheck opens the device and streams probe samples as events; nothing
// is recorded.
func startCheck(ctx context.Context, b Backend, dev lab.DeviceInfo, durS float64, realtime bool, stream int) tea.Cmd {
	return func() tea.Msg {
		if b.Lab.Open == nil {
			return runStartedMsg{err: fmt.Errorf("no device backend")}
		}
		d, err := b.Lab.Open(ctx, dev.ID, realtime)
		if err != nil {
			return runStartedMsg{err: fmt.Errorf("open device %s: %w", dev.ID, err)}
		}
		pr, ok := d.(lab.Prober)
		if !ok {
			d.Close()
			return runStartedMsg{err: fmt.Errorf("%s cannot run the MFLOPS probe", dev.ID)}
		}
		cctx, cancel := context.WithCancel(ctx)
		out := make(chan relayItem, maxBatch)
		go func() {
			defer close(out)
			defer d.Close()
			samples := make(chan lab.ProbeSample, 64)
			done := make(chan error, 1)
			go func() {
				done <- pr.Probe(cctx, lab.ProbeOptions{DurationS: durS, IntervalS: 1, Realtime: realtime}, samples)
				close(samples)
			}()
			for s := range samples {
				s := s
				out <- relayItem{Event: lab.Event{Type: lab.EventProbe, T: s.T, Probe: &s}}
			}
			if err := <-done; err != nil && cctx.Err() == nil {
				out <- relayItem{Err: err}
			}
		}()
		return runStartedMsg{run: &liveRun{stream: stream, cancel: cancel, events: out, device: d.Info()}}
	}
}
