package tui

import (
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
)

// The three dashboards (runDash: a run in progress, checkDash: a stability
// check, replayDash: a saved session) are separate components. They share
// a feed (the events folded into a runState, the latest analysis of it
// and the pane components drawing them: analysispanes.go, streampanes.go,
// laid out by dashview.go); the run and the check also share a liveStream
// (the relay from the runner and the y/N abort).

// feed folds a session's events into a runState, keeps the latest
// analysis of it (computed off the Update path, at most one at a time)
// and owns the panes that draw them: each pane is handed the events or
// the analysis it draws, and the dashboard lays them out.
type feed struct {
	st     *Styles
	state  *runState
	stream int // the stream this feed's analyses are routed back by

	panel      panelData // the analysis shown
	computing  bool
	panelVer   int
	finalDone  bool
	analyzeFor func(in []analysis.MetricInput, evs []lab.Event) panelData

	ci      ciPane
	seq     seqPane
	p       pPane
	regimes regimePane
	trials  trialsPane
	chart   chartPane
	lanes   lanesPane // a pool's devices
	where   wherePane // the differential profile (where.go)
	notes   notesPane // every warning and log line in full (notes.go)
	// metricOff is the first metric the analysis panes show: a suite's
	// many benchmarks scroll (↑/↓, pgup/pgdn) when they do not fit.
	metricOff int
}

// analyzer is what a dashboard computes its panels with: analyze takes
// the counted samples and the trials, toggles and notes so far (for the
// regimes).
type analyzer struct {
	analyze   func(in []analysis.MetricInput, evs []lab.Event) panelData
	stability func([]lab.ProbeSample) (string, []string)
}

// newFeed folds a session of plan on dev; its analyses carry stream.
func newFeed(st *Styles, dev lab.DeviceInfo, plan lab.Experiment, an analyzer, stream int) feed {
	pd := emptyPanel(plan)
	return feed{st: st, state: newRunState(dev, plan), stream: stream, panel: pd, analyzeFor: an.analyze,
		ci: newCIPane(st, pd), seq: newSeqPane(st, pd), p: newPPane(st, pd), regimes: newRegimePane(st, pd),
		trials: newTrialsPane(st), chart: newChartPane(st, an.stability), lanes: newLanesPane(st, plan.Devices),
		where: newWherePane(plan), notes: newNotesPane()}
}

// apply folds events into the state and hands them to the panes that
// draw them (the trials, the probe's chart).
func (f *feed) apply(evs []lab.Event) {
	if len(evs) == 0 {
		return
	}
	for _, ev := range evs {
		f.state.apply(ev)
	}
	msg := eventsAppliedMsg{events: evs}
	f.trials, _ = f.trials.Update(msg)
	f.chart, _ = f.chart.Update(msg)
	f.lanes, _ = f.lanes.Update(msg)
}

// maybeAnalyze starts an analysis when trials arrived since the last one
// and none is running; final (run ended, replay at its end) asks for the
// conclusion once more when nothing arrived since.
func (f *feed) maybeAnalyze(final bool) tea.Cmd {
	if f.computing || f.analyzeFor == nil {
		return nil
	}
	if f.state.Version() == f.panelVer && (!final || f.finalDone) {
		return nil
	}
	if f.state.Version() == 0 {
		return nil
	}
	f.computing = true
	in := f.state.inputs()
	evs := f.state.eventsSoFar()
	ver := f.state.Version()
	fn := f.analyzeFor
	stream := f.stream
	return func() tea.Msg {
		t0 := time.Now()
		pd := fn(in, evs)
		return reportComputedMsg{stream: stream, version: ver, final: final, panel: pd, took: time.Since(t0)}
	}
}

// reported takes a computed analysis and hands it to the analysis panes.
func (f *feed) reported(msg reportComputedMsg) {
	f.computing = false
	f.panel = msg.panel
	f.panel.final = msg.final && msg.version == f.state.Version()
	f.panelVer = msg.version
	if msg.final && msg.version == f.state.Version() {
		f.finalDone = true
	}
	shown := analysisShownMsg{panel: f.panel}
	f.ci, _ = f.ci.Update(shown)
	f.seq, _ = f.seq.Update(shown)
	f.p, _ = f.p.Update(shown)
	f.regimes, _ = f.regimes.Update(shown)
	f.lanes, _ = f.lanes.Update(shown)
}

// viewKey handles the keys of the views a dashboard opens over its
// panels (! the notes, w the where view); opening one closes the other.
// false lets the dashboard's own keys act.
func (f *feed) viewKey(msg tea.KeyPressMsg) (bool, tea.Cmd) {
	if f.notes.key(msg) {
		if f.notes.open {
			f.where.open = false
		}
		return true, nil
	}
	ok, cmd := f.whereKey(msg)
	if ok && f.where.open {
		f.notes.open = false
	}
	if !ok && !f.where.open {
		ok = f.scrollKey(msg)
	}
	return ok, cmd
}

// scrollKey scrolls the analysis panes' metrics when they do not all fit
// (panels clamps the offset to the rows shown): ↑/↓ one, pgup/pgdn a
// page.
func (f *feed) scrollKey(msg tea.KeyPressMsg) bool {
	rows := f.ci.rows
	if len(f.panel.metrics) <= rows || rows <= 0 {
		return false
	}
	switch msg.String() {
	case "down", "j":
		f.metricOff++
	case "up", "k":
		f.metricOff--
	case "pgdown":
		f.metricOff += rows
	case "pgup":
		f.metricOff -= rows
	default:
		return false
	}
	f.metricOff = min(max(f.metricOff, 0), len(f.panel.metrics)-rows)
	return true
}

// closeView closes the notes or the where view (esc); false when none
// was open.
func (f *feed) closeView() bool {
	if f.notes.close() {
		return true
	}
	was := f.where.open
	f.where.open = false
	return was
}

// viewHelp is the keys of the views for the help bar: the open view's
// only, or (short: the one-line bar, whose room the dashboard's own keys
// take) the where view's, else both.
func (f *feed) viewHelp(short bool) []key.Binding {
	switch {
	case f.notes.open:
		return f.notes.help()
	case short:
		return f.where.help()
	}
	return append(f.where.help(), f.notes.help()...)
}

// viewBody draws the open view (the notes or the where view) into w × h
// cells; false when none is open.
func (f *feed) viewBody(w, h int) (string, bool) {
	switch {
	case f.notes.open:
		return f.notesView(w, h), true
	case f.where.open:
		return f.whereView(w, h), true
	}
	return "", false
}

// liveStream is the part of a run or a check that talks to the relay: the
// stream of events, the y/N before aborting, the status line.
type liveStream struct {
	run          *liveRun
	starting     bool
	finished     bool
	quitting     bool
	aborted      bool // abort was asked for: the run ends, or never starts
	confirmAbort bool
	abortThenQ   bool
	status       string
	err          error
}

// live reports whether the stream is starting or still delivering; ended
// says whether the dashboard's fold has seen the end event.
func (l *liveStream) live(ended bool) bool {
	return l.starting || (l.run != nil && !l.finished && !ended)
}

// abort cancels the runner (which then records its end event) and shows
// status until the stream closes; thenQuit quits once it has.
func (l *liveStream) abort(thenQuit bool, status string) {
	l.quitting, l.aborted = thenQuit, true
	if l.run != nil {
		l.run.cancel()
	}
	l.status = status
}

// askQuit handles q: while running it asks y/N first, else it quits.
func (l *liveStream) askQuit(running bool) tea.Cmd {
	if !running {
		if l.run != nil {
			l.run.cancel()
		}
		return tea.Quit
	}
	l.confirmAbort, l.abortThenQ = true, true
	return nil
}

// interrupt handles ctrl+c: the first asks like q, a second aborts (with
// abortStatus) and quits once the stream is closed.
func (l *liveStream) interrupt(running bool, abortStatus string) tea.Cmd {
	if l.confirmAbort || l.quitting {
		l.abort(true, abortStatus)
		if !running {
			return tea.Quit
		}
		return nil
	}
	return l.askQuit(running)
}

// started takes the runner (or the error) and arms the first wait.
func (l *liveStream) started(msg runStartedMsg) tea.Cmd {
	l.starting = false
	if msg.err != nil {
		l.err = msg.err
		l.finished = true
		return nil
	}
	l.run = msg.run
	l.status = l.sessionStatus()
	if l.aborted {
		msg.run.cancel()
	}
	return waitForEvents(msg.run.stream, msg.run.events)
}

// arrived handles a batch of events: apply feeds them to the dashboard,
// analyze asks for the analysis once the stream is closed.
func (l *liveStream) arrived(msg eventsArrivedMsg, apply func([]lab.Event) tea.Cmd, analyze func() tea.Cmd) tea.Cmd {
	if l.run == nil || msg.stream != l.run.stream {
		return nil
	}
	if msg.err != nil {
		l.err = msg.err
	}
	cmd := apply(msg.events)
	if msg.closed {
		l.finished = true
		if l.run.sessionPath != "" {
			l.status = "saved " + homePath(l.run.sessionPath) // the help line says q quits
			if l.aborted {
				l.status = "aborted · " + l.status
			}
		}
		l.run.cancel()
		if l.quitting {
			return tea.Quit
		}
		return tea.Batch(cmd, analyze())
	}
	return tea.Batch(cmd, waitForEvents(l.run.stream, l.run.events))
}

// sessionStatus is the resting status line: where the session goes.
func (l *liveStream) sessionStatus() string {
	if l.run == nil || l.run.sessionPath == "" {
		return "not recorded: a check writes no session"
	}
	return "session: " + homePath(l.run.sessionPath)
}

// confirmKeys are the bindings shown while a y/N question is open.
func confirmKeys() keyHelp {
	ok := key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "abort"))
	no := key.NewBinding(key.WithKeys("n"), key.WithHelp("n/any key", "keep running"))
	return keyHelp{short: []key.Binding{ok, no}, full: [][]key.Binding{{ok, no}}}
}
